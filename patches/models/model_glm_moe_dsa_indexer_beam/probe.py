"""The probe of ``model-glm-moe-dsa-indexer-beam`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep import SCENARIOS, Subject

    # Subject() raises ProbeSkipped where the release has no GLM-MoE-DSA (before 5.2).
    return SCENARIOS["beam-loud"](Subject("glm_moe_dsa@selection"))
