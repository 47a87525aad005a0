"""``sliding-window-gemma2-decode-mask``: the checks every patch owes (hf_genfix.testing.patches.PatchTests), and the
``SlidingWindowCache`` part of the defect (a left-padded batch, every layer sliding): wrong upstream, right with
the patch."""

import pytest

from hf_genfix.testing.patches import PatchTests

PID = "sliding-window-gemma2-decode-mask"


def test_a_left_padded_batch_on_a_sliding_window_cache(require_applied):
    import hf_genfix
    from hf_genfix.oracles import DefectObserved
    from hf_genfix._patches.sliding_window.shared.decode_mask_probes import ring_check

    require_applied(PID)
    assert ring_check("gemma2")["max_logit_diff"] < 1e-4
    with hf_genfix.disabled(PID), pytest.raises(DefectObserved):
        ring_check("gemma2")


class TestPatch(PatchTests):
    """``sliding-window-gemma2-decode-mask``: its probe proves it on this release; its plain program gets it installed."""
