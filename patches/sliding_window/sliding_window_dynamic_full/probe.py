"""The probe of ``sliding-window-dynamic-full`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sliding import probe_assisted

    return probe_assisted(1, (ValueError, "Cannot `crop`"))
