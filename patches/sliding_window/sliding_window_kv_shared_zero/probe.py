"""The probe of ``sliding-window-kv-shared-zero`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from hf_genfix._patches.sliding_window.sliding_window_kv_shared_zero.fix import _SLIDING


def probe() -> dict:
    """Gemma-4 text (no KV-shared layers): correct steps and sliding layers that hold at most W - 1 + q keys,
    with the default dynamic cache and a static one."""
    import torch

    from hf_genfix.oracles import DefectObserved, check_rows_against_reference, left_pad
    from hf_genfix.oracles.generation import GenRun
    from hf_genfix.oracles.sliding import WINDOW, prompts, sliding_model
    from hf_genfix.oracles.sliding_static import kv_held

    model = sliding_model("gemma4")  # the large checkpoints' layout: num_kv_shared_layers = 0
    rows = prompts(10)
    ids, mask = left_pad(rows)
    figures: dict = {}
    for implementation in (None, "static"):
        label = implementation or "dynamic"
        try:
            with torch.no_grad():
                out = model.generate(ids, attention_mask=mask, max_new_tokens=30, do_sample=False,
                                     eos_token_id=None, pad_token_id=0, cache_implementation=implementation,
                                     return_dict_in_generate=True, output_logits=True)
        except IndexError as exc:
            raise DefectObserved(f"generate() with a {label} cache raised IndexError: {exc}") from exc
        run = GenRun(sequences=out.sequences, step_logits=list(out.logits), prompt_width=ids.shape[1])
        check_rows_against_reference(model, rows, run, f"Gemma-4 text, {label} cache", eos_token_id=[])
        sliding = [tokens for kind, tokens, _ in kv_held(out.past_key_values, model.config) if kind == _SLIDING]
        bound = WINDOW - 1 + 1
        if not sliding or max(sliding) > bound:
            raise DefectObserved(
                f"{label} cache: sliding layers hold {sliding or 'no layer of their own'} keys after "
                f"{ids.shape[1] + 30} tokens; the window needs at most {bound}",
                held=max(sliding, default=None), bound=bound)
        figures[f"{label}_sliding_keys_held"] = max(sliding)
    return figures
