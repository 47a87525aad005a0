"""The probe of ``decoding-beam-recurrent-state`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

import warnings


def probe() -> dict:
    from hf_genfix.oracles.sweep import SCENARIOS, Subject

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SCENARIOS["beam-loud"](Subject("mamba"))
