"""The probe of ``decoding-given-cache-use-cache`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep import SCENARIOS, Subject
    from hf_genfix.oracles.sweep.continuations import unless_upstream_fails

    # 5.0 and 5.1 raise upstream for this call (a loud error, no silent defect to observe)
    return unless_upstream_fails(lambda: SCENARIOS["prefix-reuse"](Subject("mpt")))
