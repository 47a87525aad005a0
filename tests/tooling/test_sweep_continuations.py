"""The sweep's continuation scenarios (oracles/sweep/continuations.py, issue 36 §3): registered, right where
upstream is right (a second turn and a reused prefix cache on llama and mistral, whose sliding window of 8 the
prompts pass), and able to fail: on Mamba with its continuation patch off (5.17.0 on) the second turn is a defect.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles import sweep  # noqa: E402
from hf_genfix.oracles.outcome import past_earlier_stages  # noqa: E402


def _subject(model_type: str) -> sweep.Subject:
    try:
        return sweep.Subject(model_type)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def test_the_scenarios_are_registered():
    assert {"second-turn", "prefix-reuse", "own-cache"} <= set(sweep.SCENARIOS)


@pytest.mark.parametrize("model_type", ["llama", "mistral"])
@pytest.mark.parametrize("name", ["second-turn", "prefix-reuse"])
def test_right_where_upstream_is_right(model_type, name):
    figures = sweep.SCENARIOS[name](_subject(model_type))
    assert figures["max_logit_diff"] <= 1e-4 and figures["steps_compared"] >= 8


def test_the_second_turn_fails_on_mamba_without_its_patch():
    from hf_genfix.doctor import import_targets

    import_targets()
    patch = "model-mamba-continuation"
    if next(s for s in hf_genfix.status() if s.id == patch).state not in ("applied", "forced"):
        pytest.skip(f"{patch} does not apply to this release")
    subject = _subject("mamba")
    try:
        figures = sweep.SCENARIOS["second-turn"](subject)
    except RuntimeError as exc:
        # 5.25.0: hf_genfix gets the one row right (upstream 1.46) and then meets upstream's own error in the
        # left-padded batch: 5.25 slices a second turn's ids to the new tokens and hands the mixer the mask of the
        # whole conversation (4 tokens, 17 columns). Upstream raises it too once run past its wrong row.
        with hf_genfix.disabled(patch), pytest.raises(DefectObserved):
            sweep.SCENARIOS["second-turn"](subject)
        with hf_genfix.disabled(), past_earlier_stages(), pytest.raises(type(exc), match=re.escape(str(exc)[:40])):
            sweep.SCENARIOS["second-turn"](subject)
        pytest.skip(f"upstream's own error in the padded batch, past its wrong row: {exc}")
    with hf_genfix.disabled(patch), pytest.raises(DefectObserved):
        sweep.SCENARIOS["second-turn"](subject)
    assert figures["max_logit_diff"] <= 1e-4


@pytest.mark.parametrize("model_type", ["llama", "mamba"])
def test_causal_prefix_holds_where_the_forward_is_causal(model_type):
    figures = sweep.SCENARIOS["causal-prefix"](_subject(model_type))
    assert figures["max_logit_diff"] <= 1e-4 and figures["steps_compared"] == 4


def test_causal_prefix_fails_on_a_scan_that_carries_its_state_wrongly():
    """Zamba2's scan between chunks (4.49-5.14) with model-zamba2-chunk-scan off: the oracle itself is not causal."""
    from hf_genfix.doctor import import_targets

    import_targets()
    patch = "model-zamba2-chunk-scan"
    if next(s for s in hf_genfix.status() if s.id == patch).state not in ("applied", "forced"):
        pytest.skip(f"{patch} does not apply to this release")
    subject = _subject("zamba2")
    assert sweep.SCENARIOS["causal-prefix"](subject)["max_logit_diff"] <= 1e-4
    with hf_genfix.disabled(patch), pytest.raises(DefectObserved, match="not causal"):
        sweep.SCENARIOS["causal-prefix"](subject)


def test_a_model_whose_first_position_is_right_is_built_not_skipped_as_an_encoder(monkeypatch):
    """The subject's causality check skips bidirectional models that the config's is_decoder=True makes causal
    (BertGeneration); a causal LM wrong past its first positions (Mamba-2 on 4.46-4.47), or whose forward mixes
    every position, is a defect to report, not an encoder."""
    import torch

    from hf_genfix.oracles.sweep import core

    def leaky(model, row):  # later positions see the row's length; the first does not
        logits = torch.zeros(len(row), 4)
        logits[1:] += len(row)
        return logits

    monkeypatch.setattr(core, "reference_logits", leaky)
    subject = sweep.Subject("llama")
    assert subject.model_type == "llama"

    def bidirectional(model, row):
        return torch.full((len(row), 4), float(len(row)))

    # Bidirectional whatever the config says: a causal LM whose forward mixes positions (Llama-4's MoE on
    # 4.54-4.56), built so that the causal-prefix scenario names it
    monkeypatch.setattr(core, "reference_logits", bidirectional)
    assert sweep.Subject("llama").model_type == "llama"

    def encoder(model, row):  # bidirectional unless the config's own switch says decoder
        if getattr(model.config, "is_decoder", False):
            return torch.zeros(len(row), 4)
        return bidirectional(model, row)

    monkeypatch.setattr(core, "reference_logits", encoder)
    with pytest.raises(ProbeSkipped, match="encoder used as a decoder"):
        sweep.Subject("bert-generation")
