"""``model-zamba-chunk-state``: the checks every patch owes (hf_genfix.testing.patches.PatchTests), and a left-padded
batch prefilled in chunks, whose short rows' pads come after the first chunk's state (the sweep's scenario)."""

from __future__ import annotations

import pytest

import hf_genfix
from hf_genfix.testing.patches import PatchTests

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PATCH = "model-zamba-chunk-state"


class TestPatch(PatchTests):
    """``model-zamba-chunk-state``: its probe proves it on this release; its plain program gets it installed."""


def test_a_left_padded_batch_prefilled_in_chunks_matches_each_row():
    """generate(prefill_chunk_size=4) on rows of 13, 5 and 9 tokens: the short rows' pads are fed after the first
    chunk's cached state, in rows whose states hold nothing yet; they are split with the rest (each pad leaves its
    row's state at zeros). Upstream restarts the scan from zeros there (5.5-5.14: 3.6e-4 on the sweep's tame Zamba,
    an open finding until session 29); where upstream refuses chunked prefill, hf_genfix raises the same."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from hf_genfix.doctor import import_targets
    from hf_genfix.oracles import ProbeSkipped, sweep

    import_targets()  # an armed patch installs when its module is imported
    if next(s for s in hf_genfix.status() if s.id == PATCH).state not in ("applied", "forced"):
        pytest.skip(f"{PATCH} does not apply to this release")
    try:
        subject = sweep.Subject("zamba")
    except ProbeSkipped as exc:
        pytest.skip(str(exc))
    scenario = sweep.SCENARIOS["left-padded-chunked-prefill"]
    ours = sweep.observe(scenario, subject)
    if ours.outcome in ("raised", "unsupported", "skipped"):
        with hf_genfix.disabled():
            theirs = sweep.observe(scenario, subject)
        assert theirs.outcome == ours.outcome, theirs
        return
    assert ours.outcome == "pass", ours.message
