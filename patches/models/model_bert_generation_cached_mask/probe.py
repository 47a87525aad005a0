"""The probe of ``model-bert-generation-cached-mask`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.sweep import SCENARIOS
    from hf_genfix.oracles.sweep.bert_decoders import BertDecoderSubject

    return SCENARIOS["bert-decoder-cached"](BertDecoderSubject("bert-generation"))
