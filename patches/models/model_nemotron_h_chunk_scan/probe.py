"""The probe of ``model-nemotron-h-chunk-scan`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix._patches.models.shared.mamba2_chunk_scan_probes import probe_chunk_scan

    # one Mamba layer and one attention layer: 5.13-5.14 have no cache layer for the tiny default's "mlp" layer
    return probe_chunk_scan("nemotron_h", "NemotronHMamba2Mixer", hybrid_override_pattern="M*")
