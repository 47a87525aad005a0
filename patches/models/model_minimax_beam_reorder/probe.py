"""The probe of ``model-minimax-beam-reorder`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep import SCENARIOS, Subject

    # Subject() raises ProbeSkipped where the release has no MiniMax (before 4.53).
    return SCENARIOS["beam-loud"](Subject("minimax"))
