"""The probe of ``decoding-processor-padding`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any


def probe() -> dict:
    from hf_genfix.oracles import tiny_model
    from hf_genfix.oracles.sweep.processors import LENGTHS, check_rows, rows_of

    model = tiny_model("llama")
    rows = rows_of(LENGTHS, vocab=128, seed=11)
    figures: dict[str, Any] = {}
    for name, option in (("no_repeat_ngram_size", {"no_repeat_ngram_size": 1}),
                         ("encoder_repetition_penalty", {"encoder_repetition_penalty": 1.8}),
                         ("repetition_penalty", {"repetition_penalty": 1.8})):
        figures[name] = check_rows(model, rows, "pad-eos", name, **option)["steps_compared"]
    return figures
