"""The probes of ``model-qwen2-vl-cache-position`` and ``model-qwen2-5-vl-cache-position``: the defect, and how it
is detected, are in ``mrope_cache_position.py``'s docstring.
"""

from __future__ import annotations


def _probe(arch: str) -> dict:
    from hf_genfix.oracles import DefectObserved, ProbeSkipped
    from hf_genfix.oracles.sweep import SCENARIOS
    from hf_genfix.oracles.sweep.families import ImageTextSubject

    subject = ImageTextSubject(arch)  # ProbeSkipped where the release cannot build it tiny
    try:
        # Loud weights (std 0.3): positions off by the prompt's length move logits by units.
        return SCENARIOS["image-chunk-after-cache"](subject)
    except RuntimeError as exc:
        if "refers to a single memory location" in str(exc):
            # 4.54-4.56's own line: position_ids += delta on an expanded tensor raises on every continuation that
            # reaches it (with the patch's cache_position too). Loud, and not the offset fixed here.
            raise ProbeSkipped(f"this release's M-RoPE offset raises on a chunk after a cache: {exc}") from exc
        if "must match the size" not in str(exc):
            raise
        if hasattr(getattr(subject.model, "model", None), "compute_3d_position_ids"):
            # 5.x's own code (compute_3d_position_ids): 5.2 derives the positions of a hand call from the whole
            # mask, not from its last columns, and raises a shape error. Loud, and not the offset fixed here.
            raise ProbeSkipped(f"this release's M-RoPE positions raise on a chunk after a cache: {exc}") from exc
        # Qwen2-VL on 4.57 adds a zeros tensor of the chunk's shape as the offset: a shape error, the same defect.
        raise DefectObserved(f"a 5-token chunk after a cache holding the image raises: {exc}") from exc


def probe_qwen2_vl() -> dict:
    return _probe("qwen2_vl")


def probe_qwen2_5_vl() -> dict:
    return _probe("qwen2_5_vl")
