"""``model-nemotron-h-chunk-scan``: the checks every patch owes (hf_genfix.testing.patches.PatchTests), and a
left-padded batch prefilled in chunks (the sweep's scenario) against each row alone."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_genfix.testing.patches import PatchTests  # noqa: E402

PATCH = "model-nemotron-h-chunk-scan"


def test_a_left_padded_batch_prefilled_in_chunks_matches_each_row(require_applied):
    """generate(prefill_chunk_size=4) on rows of 13, 5 and 9 tokens: the short rows' pads continue after the first
    chunk's cached state. 5.14 keeps a layer's states in a dict keyed by state index, which the fix read as no state
    and left to upstream's wrong chunk path: 0.40 on 5.14.1 with the patch (session 30's sweep)."""
    from hf_genfix.oracles import sweep

    require_applied(PATCH)
    out = sweep.observe(sweep.SCENARIOS["left-padded-chunked-prefill"], sweep.Subject("nemotron_h"))
    assert out.outcome == "pass", out.message


class TestPatch(PatchTests):
    """``model-nemotron-h-chunk-scan``: its probe proves it on this release; its plain program gets it installed."""
