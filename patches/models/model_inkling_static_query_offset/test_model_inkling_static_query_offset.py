"""model-inkling-static-query-offset: a static-cache generate() on Inkling's "hybrid" layers places its queries
where a no-cache forward does (5.14 on).

StaticLayer.get_seq_length hands out the layer's live counter, which the layer's update advances in place, so the
query offset InklingAttention reads before the update has moved on by the step's tokens when it builds the
relative-position logits. With the patch: static-cache generation of unpadded and left-padded rows matches the
reference at every step (all layers "hybrid"), the length a caller reads no longer moves with the cache while
the layer's counter still does, and the dynamic cache is upstream's bitwise. Without it (``hf_genfix.disabled``)
the second generated token is already off. Outside the range the patch is not installed and the tests are skipped.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles.sliding import check_past_window, prompts  # noqa: E402
from hf_genfix.oracles.sweep.continuations import loud_model  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PATCH = "model-inkling-static-query-offset"


@pytest.fixture(scope="module")
def inkling(require_applied):
    require_applied(PATCH)
    try:
        return loud_model("inkling_text", local_layer_ids=[])
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("lengths", [(10,), (13, 6)])
def test_static_cache_generation_matches_the_reference(inkling, lengths):
    rows = prompts(*lengths, seed=len(lengths))
    figures = check_past_window(inkling, rows, 6, f"inkling static {lengths}", cache_implementation="static")
    assert figures["steps_compared"] == 6 * len(rows)
    with hf_genfix.disabled(PATCH), pytest.raises(DefectObserved, match="generated step 1"):
        check_past_window(inkling, rows, 6, "inkling static, patch off", cache_implementation="static")


def test_the_length_read_before_an_update_stays_put(inkling):
    import torch
    from transformers.cache_utils import LinearAttentionAndStaticFullAttentionLayer

    layer = LinearAttentionAndStaticFullAttentionLayer(max_cache_len=16)
    keys = torch.zeros(1, 2, 3, 8)
    layer.update(keys, keys)
    read = layer.get_seq_length()
    layer.update(keys[:, :, :1], keys[:, :, :1])
    assert int(read) == 3 and int(layer.get_seq_length()) == 4 and int(layer.cumulative_length) == 4
    with hf_genfix.disabled(PATCH):
        live = layer.get_seq_length()
        layer.update(keys[:, :, :1], keys[:, :, :1])
    assert live is layer.cumulative_length and int(live) == 5  # the test can fail: upstream's moves with the cache


def test_a_dynamic_cache_is_upstream_s_bitwise(inkling):
    import torch

    from hf_genfix.oracles import generate_steps, left_pad

    ids, mask = left_pad(prompts(12, 5, seed=4))
    run = generate_steps(inkling, ids, mask, max_new_tokens=4, pad_token_id=0, eos_token_id=None)
    with hf_genfix.disabled(PATCH):
        upstream = generate_steps(inkling, ids, mask, max_new_tokens=4, pad_token_id=0, eos_token_id=None)
    assert torch.equal(run.sequences, upstream.sequences)
    assert all(torch.equal(a, b) for a, b in zip(run.step_logits, upstream.step_logits))


class TestPatch(PatchTests):
    """``model-inkling-static-query-offset``: its probe proves it on this release; its plain program gets it
    installed."""
