"""The probe of ``padding-prefill-chunks`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from hf_genfix.oracles.generation import uncompiled


def probe() -> dict:
    from transformers import GenerationConfig

    from hf_genfix.oracles import ProbeSkipped, tiny_model
    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps, left_pad
    from hf_genfix.oracles.sliding import prompts

    if not hasattr(GenerationConfig(), "prefill_chunk_size"):
        raise ProbeSkipped("generate() has no prefill_chunk_size on this release")
    rows = prompts(13, 5, 9)
    ids, mask = left_pad(rows)
    figures: dict = {"max_logit_diff": 0.0, "models": 0}
    for model_type in ("llama", "gpt2"):
        model = tiny_model(model_type)
        try:
            with uncompiled() as no_compile:
                run = generate_steps(model, ids, mask, max_new_tokens=6, pad_token_id=0, eos_token_id=None,
                                     prefill_chunk_size=4, **no_compile)
        except ValueError as exc:
            # 4.51 gives GPT-2 no default cache, and the chunk loop refuses to run without one.
            if model_type == "llama" or "without a cache" not in str(exc):
                raise
            continue
        checked = check_rows_against_reference(
            model, rows, run, f"{model_type}, left-padded rows of 13, 5, 9 tokens, prefill in chunks of 4",
            eos_token_id=[])
        figures["max_logit_diff"] = max(figures["max_logit_diff"], checked["max_logit_diff"])
        figures["models"] += 1
    figures.update(rows=len(rows), chunk=4)
    return figures
