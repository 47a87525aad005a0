"""The probe of ``model-kosmos2-padded-positions`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep.families import ImageTextSubject, image_padded

    return image_padded(ImageTextSubject("kosmos-2"))
