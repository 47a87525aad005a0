"""The probe of ``model-llama4-moe-router-scores`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep import SCENARIOS, Subject
    from hf_genfix.oracles.sweep.continuations import unless_upstream_fails

    # Subject() raises ProbeSkipped where the release has no Llama-4 (before 4.51); 4.51.3-4.52.4's tiny Llama-4
    # raises upstream (a bfloat16 matmul against float32 weights): a loud error, no silent defect to observe.
    return unless_upstream_fails(lambda: SCENARIOS["causal-prefix"](Subject("llama4_text")))
