"""The probe of ``model-llava-next-legacy-decode-mask`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep import SCENARIOS, imagetext  # noqa: F401 - imagetext registers the builder
    from hf_genfix.oracles.sweep.families import ImageTextSubject

    return SCENARIOS["image-loud-cached-padded"](ImageTextSubject("llava_next"))
