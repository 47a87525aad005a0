"""The probes of ``model-idefics2-uncached-pixels``, ``model-idefics3-uncached-pixels``,
``model-smolvlm-uncached-pixels``: the defects, and how they are detected, are in ``_idefics_uncached_pixels.py``'s
docstring.
"""

from __future__ import annotations


def _probe(arch: str) -> dict:
    from hf_genfix.oracles.sweep.families import ImageTextSubject, image_uncached

    return image_uncached(ImageTextSubject(arch))


def probe_idefics2() -> dict:
    return _probe("idefics2")


def probe_idefics3() -> dict:
    return _probe("idefics3")


def probe_smolvlm() -> dict:
    return _probe("smolvlm")
