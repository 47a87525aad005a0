"""The probe of ``model-inkling-static-query-offset`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sliding import check_past_window, prompts
    from hf_genfix.oracles.sweep.continuations import loud_model

    # both layers "hybrid" (local_layer_ids=[]: no "hybrid_sliding" layer, whose static mask is another defect on
    # 5.14-5.24), matrices at the loud models' std (ProbeSkipped where the release has no Inkling: before 5.14)
    model = loud_model("inkling_text", local_layer_ids=[])
    return check_past_window(model, prompts(10, seed=6), 6, "inkling_text (hybrid layers), static cache, "
                             "10-token prompt", cache_implementation="static")
