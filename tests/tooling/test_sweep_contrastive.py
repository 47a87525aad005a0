"""The sweep's contrastive-search scenarios (``hf_genfix.oracles.sweep.contrastive``): they pass where generate() is
right, and their oracle catches a choice that is not the definition's."""

import pytest

pytest.importorskip("transformers")


def _built_in():
    from transformers.generation.utils import GenerationMixin

    if not hasattr(GenerationMixin, "_contrastive_search"):
        pytest.skip("contrastive search is a Hub repository on this release (4.56+)")


def test_skipped_where_the_release_has_no_built_in_contrastive_search():
    from transformers.generation.utils import GenerationMixin

    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep import SCENARIOS
    from hf_genfix.testing.patches import sweep_subject

    if hasattr(GenerationMixin, "_contrastive_search"):
        pytest.skip("built in on this release")
    with pytest.raises(ProbeSkipped):
        SCENARIOS["contrastive"](sweep_subject("llama"))


@pytest.mark.parametrize("name", ["contrastive", "contrastive-padded"])
def test_llama_is_its_definition(name):
    from hf_genfix.oracles.sweep import SCENARIOS
    from hf_genfix.testing.patches import sweep_subject

    _built_in()
    figures = SCENARIOS[name](sweep_subject("llama"))
    assert figures["max_logit_diff"] < 1e-4 and figures["choices_compared"] >= 6


def test_a_choice_by_another_alpha_is_caught(monkeypatch):
    """The run's tokens judged by a definition with another alpha: the oracle says which step parts (it can fail)."""
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.generation import generate_steps, left_pad
    from hf_genfix.oracles.sweep import contrastive
    from hf_genfix.testing.patches import sweep_subject

    _built_in()
    s = sweep_subject("llama")
    rows = s.rows(10, 10, seed=21)
    run = generate_steps(s.model, *left_pad(rows), max_new_tokens=4, penalty_alpha=0.6, top_k=4, pad_token_id=0,
                         eos_token_id=None)
    monkeypatch.setattr(contrastive, "ALPHA", 0.2)
    with pytest.raises(DefectObserved, match="is not contrastive search's choice"):
        contrastive._check_choices(lambda b, seqs: contrastive._last_hidden(s.model, seqs), rows, run, "alpha 0.2",
                                   suppressed=False)
