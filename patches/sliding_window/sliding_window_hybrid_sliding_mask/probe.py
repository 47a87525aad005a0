"""The probe of ``sliding-window-hybrid-sliding-mask`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sliding import WINDOW, check_past_window, prompts
    from hf_genfix.oracles.sweep.core import build

    # the sweep's tiny inkling_text: window 8, both layers "hybrid_sliding", calibrated weights (build raises
    # ProbeSkipped where the release has no Inkling: before 5.14)
    model = build("inkling_text", sliding_window=WINDOW)
    return check_past_window(model, prompts(10, seed=6), 6, "inkling_text, static cache, 10-token prompt",
                             cache_implementation="static")
