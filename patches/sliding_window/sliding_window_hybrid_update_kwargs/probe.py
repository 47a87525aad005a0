"""The probe of ``sliding-window-hybrid-update-kwargs`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles import tiny_model
    from hf_genfix.oracles.decode import defect_on_error
    from hf_genfix.oracles.sliding import MODELS, WINDOW, check_past_window, prompts

    model_type, extra = MODELS["gemma2"]
    model = tiny_model(model_type, sliding_window=WINDOW, **extra)
    what = f"gemma2, sliding_window={WINDOW}, rows of 12 and 5 tokens left-padded, 8 greedy tokens (hybrid cache)"
    with defect_on_error(what, (IndexError,)):
        return check_past_window(model, prompts(12, 5, seed=7), 8, what)
