"""The probe of ``prepare-inputs-encoder-mask`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep.families import Seq2SeqSubject, s2s_padded

    return s2s_padded(Seq2SeqSubject("bart"))
