"""The probe of ``model-mamba-state-chunk`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from hf_genfix._patches.models.shared.mamba_state_chunk_probes import probe_refusal


def probe() -> dict:
    return probe_refusal("mamba")
