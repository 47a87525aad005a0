"""The probe of ``decoding-contrastive-zero-hidden`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep import SCENARIOS, Subject

    return SCENARIOS["contrastive-padded"](Subject("gpt_oss"))
