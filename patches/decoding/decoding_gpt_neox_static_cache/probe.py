"""The probe of ``decoding-gpt-neox-static-cache`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles import DefectObserved, ProbeSkipped, tiny_model
    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps, left_pad
    from hf_genfix.oracles.sliding import prompts

    model = tiny_model("gpt_neox")
    if not getattr(model, "_supports_static_cache", True):
        raise ProbeSkipped("GPT-NeoX does not support static caches on this release")
    rows = prompts(10, 6)
    ids, mask = left_pad(rows)
    what = "tiny GPT-NeoX (eager), left-padded rows of 10 and 6 tokens, static cache"
    try:
        run = generate_steps(model, ids, mask, max_new_tokens=6, pad_token_id=0, eos_token_id=None,
                             cache_implementation="static")
    except RuntimeError as exc:
        if "must match the size of tensor" not in str(exc):
            raise
        raise DefectObserved(f"{what}: {exc}") from exc
    except ValueError as exc:
        if "cache_implementation" not in str(exc):
            raise
        raise ProbeSkipped(f"GPT-NeoX does not support static caches on this release: {exc}") from exc
    figures = check_rows_against_reference(model, rows, run, what, eos_token_id=[])
    figures.update(rows=len(rows))
    return figures
