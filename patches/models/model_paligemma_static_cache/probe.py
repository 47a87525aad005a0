"""The probe of ``model-paligemma-static-cache`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep.families import ImageTextSubject, image_static_cache

    return image_static_cache(ImageTextSubject("paligemma"))
