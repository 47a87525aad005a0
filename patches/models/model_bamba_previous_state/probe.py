"""The probe of ``model-bamba-previous-state`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix._patches.models.shared.hybrid_previous_state_probes import probe_cached

    return probe_cached("bamba")
