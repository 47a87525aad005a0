"""The probe of ``model-gemma3n-uncached-kv-sharing`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix._patches.models.shared.kv_sharing_uncached_probes import probe_uncached_forward

    return probe_uncached_forward("gemma3n_text")
