"""The probe of ``model-mamba2-chunk-scan`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix._patches.models.shared.mamba2_chunk_scan_probes import probe_chunk_scan

    return probe_chunk_scan("mamba2", "Mamba2Mixer")
