"""The probes of ``model-qwen2-5-vl-rope-deltas-steps``, ``model-qwen2-5-vl-rope-deltas``,
``model-qwen2-vl-rope-deltas-steps``, ``model-qwen2-vl-rope-deltas``: the defects, and how they are detected, are in
``_qwen2_vl_rope_deltas.py``'s docstring.
"""

from __future__ import annotations


def _probe(arch: str) -> dict:
    from hf_genfix.oracles.sweep import SCENARIOS
    from hf_genfix.oracles.sweep.families import ImageTextSubject

    # Loud weights (std 0.3): the offsets' error moves logits by units, not by 1e-3.
    return SCENARIOS["image-second-turn-text-padded"](ImageTextSubject(arch))


def probe_qwen2_vl() -> dict:
    return _probe("qwen2_vl")


def probe_qwen2_5_vl() -> dict:
    return _probe("qwen2_5_vl")


probe_qwen2_vl_steps, probe_qwen2_5_vl_steps = probe_qwen2_vl, probe_qwen2_5_vl
