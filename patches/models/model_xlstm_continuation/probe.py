"""The probe of ``model-xlstm-continuation`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep.continuations import probe_second_turn

    return probe_second_turn("xlstm")
