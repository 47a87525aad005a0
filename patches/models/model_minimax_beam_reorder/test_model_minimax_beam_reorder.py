"""``model-minimax-beam-reorder``: the checks every patch owes (hf_genfix.testing.patches.PatchTests), and the
beams of a padded batch with the cache against the same without it."""

import pytest

from hf_genfix.testing.patches import PatchTests


def test_a_padded_batch_beams_as_without_a_cache(require_applied):
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep import Subject
    from hf_genfix.oracles.sweep.continuations import beam_equivalence, loud

    require_applied("model-minimax-beam-reorder")
    try:
        subject = Subject("minimax")
    except ProbeSkipped as exc:
        pytest.skip(str(exc))
    assert beam_equivalence(loud(subject), [subject.rows(9, 5, seed=8)], new=8)["rows_compared"] == 2


class TestPatch(PatchTests):
    """``model-minimax-beam-reorder``: its probe proves it on this release; its plain program gets it installed."""
