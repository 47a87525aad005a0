"""The probe of ``sliding-window-ring-roll`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad, tiny_model
    from hf_genfix.oracles.sliding import MODELS, WINDOW, prompts

    worst: dict = {"max_logit_diff": 0.0, "steps_compared": 0}
    for name, cache in (("gemma2", None), ("mistral", "sliding_window")):
        model_type, extra = MODELS[name]
        model = tiny_model(model_type, sliding_window=WINDOW, **extra)
        rows = prompts(5, seed=10)
        ids, mask = left_pad(rows)
        kwargs = {"cache_implementation": cache} if cache else {}
        run = generate_steps(model, ids, mask, max_new_tokens=WINDOW, pad_token_id=0, eos_token_id=None, **kwargs)
        figures = check_rows_against_reference(model, rows, run, f"{name}, sliding_window={WINDOW}, a 5-token prompt, "
                                               f"{WINDOW} greedy tokens ({cache or 'default'} cache)", eos_token_id=[])
        worst = {"max_logit_diff": max(worst["max_logit_diff"], figures["max_logit_diff"]),
                 "steps_compared": worst["steps_compared"] + figures["steps_compared"]}
    return worst
