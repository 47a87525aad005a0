"""The probe of ``model-gemma3n-altup-zero-rows`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep import SCENARIOS, Subject

    # Subject() raises ProbeSkipped where the release has no Gemma-3n (before 4.53).
    return SCENARIOS["left-padded"](Subject("gemma3n_text"))
