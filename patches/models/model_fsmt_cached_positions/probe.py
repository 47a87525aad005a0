"""The probe of ``model-fsmt-cached-positions`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep.families import Seq2SeqSubject, s2s_cached

    return s2s_cached(Seq2SeqSubject("fsmt"))
