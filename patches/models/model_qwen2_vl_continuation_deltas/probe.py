"""The probe of ``model-qwen2-vl-continuation-deltas`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep import SCENARIOS, imagetext  # noqa: F401 - imagetext registers the scenarios
    from hf_genfix.oracles.sweep.families import ImageTextSubject

    return SCENARIOS["image-second-turn-text-padded"](ImageTextSubject("qwen2_vl"))
