"""The probe of ``decoding-seq2seq-continuation`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

import warnings


def probe() -> dict:
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep import SCENARIOS
    from hf_genfix.oracles.sweep.families import Seq2SeqSubject

    figures = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 5.24+: past_key_values= is deprecated for cache=
        for model_type in ("bart", "t5"):
            try:
                subject = Seq2SeqSubject(model_type)
            except ProbeSkipped:
                continue
            for scenario in ("s2s-second-turn", "s2s-prefix-reuse"):
                got = SCENARIOS[scenario](subject)
                figures[f"{model_type} {scenario}"] = got["max_logit_diff"]
    if not figures:
        raise ProbeSkipped("neither BART nor T5 builds tiny on this release")
    return {"max_logit_diff": max(figures.values()), **figures}
