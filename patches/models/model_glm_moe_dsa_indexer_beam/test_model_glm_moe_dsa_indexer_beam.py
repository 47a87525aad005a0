"""``model-glm-moe-dsa-indexer-beam``: the checks every patch owes (hf_genfix.testing.patches.PatchTests), the beams
of a padded batch with the cache against the same without it, and a cache no GLM-MoE-DSA layer used reordered as
upstream does."""

import pytest

from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise, sweep_subject

PID = "model-glm-moe-dsa-indexer-beam"


def _subject():
    return sweep_subject("glm_moe_dsa@selection")


def test_a_padded_batch_beams_as_without_a_cache(require_applied):
    from hf_genfix.oracles.sweep.continuations import beam_equivalence, loud

    require_applied(PID)
    subject = _subject()
    assert beam_equivalence(loud(subject), [subject.rows(9, 5, seed=8)], new=8)["rows_compared"] == 2


def test_without_the_patch_the_beams_part(require_applied):
    import hf_genfix
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.sweep import SCENARIOS

    require_applied(PID)
    subject = _subject()
    with hf_genfix.disabled(PID), pytest.raises(DefectObserved, match="beam search"):
        SCENARIOS["beam-loud"](subject)


def test_another_models_cache_is_reordered_as_upstream(require_applied):
    """A llama's beam search passes through the wrapped Cache.reorder_cache: nothing noted, upstream's output."""
    import torch
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep import Subject

    require_applied(PID)
    try:
        subject = Subject("llama")
    except ProbeSkipped as exc:
        pytest.skip(str(exc))
    ids = torch.tensor(subject.rows(8, 8, seed=3))
    assert_upstream_bitwise(subject.model, PID, ids, num_beams=3, max_new_tokens=6, attention_mask=torch.ones_like(ids))


class TestPatch(PatchTests):
    """``model-glm-moe-dsa-indexer-beam``: its probe proves it on this release; its plain program installs it."""
