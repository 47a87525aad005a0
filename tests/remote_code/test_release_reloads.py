"""``legacy_models._release_reloads``: a release whose ``from_pretrained`` fails on every saved model (4.51.0 without
accelerate) skips the reload scenarios on both sides of the differential, before a remote family is built."""

from __future__ import annotations

import pytest

from hf_genfix.oracles import legacy_models
from hf_genfix.oracles.outcome import ProbeSkipped


@pytest.fixture(autouse=True)
def _fresh_verdict(monkeypatch):
    monkeypatch.setattr(legacy_models, "_RELOADS", {})


def test_a_release_that_reloads_runs_the_scenario():
    legacy_models._release_reloads()  # transformers' own GPT-2, saved and loaded back: no exception
    assert legacy_models._RELOADS == {"verdict": ""}


def test_a_release_whose_from_pretrained_fails_on_any_model_skips(monkeypatch):
    import transformers

    def broken(*args, **kwargs):  # what 4.51.0 raises without accelerate
        raise NameError("name 'init_empty_weights' is not defined")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", broken)
    with pytest.raises(ProbeSkipped, match="init_empty_weights"):
        legacy_models._release_reloads()
    with pytest.raises(ProbeSkipped):  # decided once per process
        legacy_models._release_reloads()
