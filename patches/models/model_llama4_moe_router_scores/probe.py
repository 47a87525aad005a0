"""The probe of ``model-llama4-moe-router-scores`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep import SCENARIOS, Subject

    # Subject() raises ProbeSkipped where the release has no Llama-4 (before 4.51).
    return SCENARIOS["causal-prefix"](Subject("llama4_text"))
