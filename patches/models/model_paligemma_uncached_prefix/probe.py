"""The probe of ``model-paligemma-uncached-prefix`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep.families import ImageTextSubject, image_uncached

    return image_uncached(ImageTextSubject("paligemma"))
