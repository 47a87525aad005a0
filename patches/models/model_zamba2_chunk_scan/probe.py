"""The probe of ``model-zamba2-chunk-scan`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.mamba2_chunk_scan_probes import one_chunk as _one_chunk

MIXER = "Zamba2MambaMixer"


def probe() -> dict:
    from hf_genfix._patches.models.shared.mamba2_chunk_scan_probes import probe_chunk_scan

    # use_mem_rope: without it 5.0-5.3 cannot run the tiny Zamba2 (no rotary_emb)
    return probe_chunk_scan("zamba2", MIXER, use_mem_rope=True)


def one_chunk(model: Any, tokens: int) -> _one_chunk:
    """Every Zamba2 mixer of ``model`` scans up to ``tokens`` in one chunk inside the block (the tests' reference)."""
    return _one_chunk(model, tokens, MIXER)
