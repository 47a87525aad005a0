"""model-recurrent-gemma-continuation: continuations of a RecurrentGemma cache.

With hf_genfix active: a second turn from generate()'s returned cache, a prefix cache reused through
``copy.deepcopy`` for two continuations, and new tokens fed alone after a cache all match a no-cache forward of the
whole conversation (one row and a left-padded batch), and so does a plainly cached left-padded batch. With the patch
off the second turn is wrong; what upstream gets right (a plain cached generate() of one row) is bitwise upstream's,
and a cache filled while the patch was off is left to upstream.
"""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles.reference import max_diff, reference_logits  # noqa: E402
from hf_genfix.oracles.sweep.continuations import loud_model, prefix_reuse, second_turn  # noqa: E402

from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise  # noqa: E402

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PATCH = "model-recurrent-gemma-continuation"
ROW, TURN = [17, 44, 91, 23, 5, 60, 12, 77, 30, 9], [40, 41, 42]
ROWS = {"one-row": [ROW], "left-padded": [ROW, ROW[:6], ROW[2:]]}


def _applied() -> bool:
    from hf_genfix.doctor import import_targets

    import_targets()
    return next(s for s in hf_genfix.status() if s.id == PATCH).state in ("applied", "forced")


@pytest.fixture(scope="module")
def model():
    if not _applied():
        pytest.skip(f"{PATCH} does not apply to this release")
    try:
        return loud_model("recurrent_gemma", num_hidden_layers=3)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("rows", list(ROWS.values()), ids=list(ROWS))
def test_second_turn_from_the_returned_cache_matches_the_no_cache_forward(model, rows):
    assert second_turn(model, rows, TURN)["max_logit_diff"] <= 1e-4


@pytest.mark.parametrize("rows", list(ROWS.values()), ids=list(ROWS))
def test_a_prefix_cache_reused_by_deepcopy_matches_the_no_cache_forward(model, rows):
    # Two continuations from copies of one prefix cache: the second reads the copy's states, not the ones the
    # first continuation left in the model's modules.
    assert prefix_reuse(model, rows, [TURN, [7, 8, 9, 10]])["max_logit_diff"] <= 1e-4


def test_new_tokens_alone_after_a_cache_continue_the_state(model):
    import torch
    from transformers.cache_utils import DynamicCache

    with torch.no_grad():
        cache = DynamicCache(config=model.config)
        model(torch.tensor([ROW]), past_key_values=cache, use_cache=True)
        first = model(torch.tensor([TURN]), past_key_values=copy.deepcopy(cache), use_cache=True).logits[0]
        again = model(torch.tensor([TURN]), past_key_values=copy.deepcopy(cache), use_cache=True).logits[0]
    reference = reference_logits(model, ROW + TURN)[len(ROW):]
    assert max_diff(first, reference) <= 1e-4
    assert torch.equal(first, again)  # the copy's states, whatever the first call left in the modules


def test_the_returned_cache_says_its_length(model):
    import torch

    ids = torch.tensor([ROW])
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=4, do_sample=False, return_dict_in_generate=True,
                             pad_token_id=0, eos_token_id=None)
    assert int(out.past_key_values.get_seq_length()) == out.sequences.shape[1] - 1
    assert int(copy.deepcopy(out.past_key_values).get_seq_length()) == out.sequences.shape[1] - 1


def test_without_the_patch_the_second_turn_is_wrong(model):
    # 5.18-5.22 raise instead (the masks sized by the cache's empty first layer): loud there, silent elsewhere.
    with hf_genfix.disabled(PATCH), pytest.raises((DefectObserved, RuntimeError)) as caught:
        second_turn(model, [ROW], TURN)
    if isinstance(caught.value, DefectObserved):
        assert caught.value.figures["max_logit_diff"] > 1e-2


def test_a_plain_cached_generate_of_one_row_is_upstreams(model):
    import torch

    assert_upstream_bitwise(model, PATCH, torch.tensor([ROW]))


def test_a_left_padded_batch_matches_each_row_alone(model):
    # 5.18-5.22 size its masks by the cache's empty first layer without the patch (pads attended from step 1).
    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps, left_pad

    rows = ROWS["left-padded"]
    ids, mask = left_pad(rows)
    run = generate_steps(model, ids, mask, max_new_tokens=4, min_new_tokens=4, pad_token_id=0, eos_token_id=None)
    assert check_rows_against_reference(model, rows, run, "left-padded", eos_token_id=[])["max_logit_diff"] <= 1e-4


def test_a_cache_filled_with_the_patch_off_is_left_to_upstream(model):
    import torch
    from transformers.cache_utils import DynamicCache

    def prefilled():
        # with the patch off: no record of the states on the cache (the modules hold the prompt's, as upstream's)
        with hf_genfix.disabled(PATCH):
            cache = DynamicCache(config=model.config)
            model(torch.tensor([ROW]), past_key_values=cache, use_cache=True)
        return cache

    def continued(cache):
        return model(torch.tensor([TURN]), past_key_values=cache, use_cache=True).logits

    with torch.no_grad():
        cache = prefilled()
        try:
            with hf_genfix.disabled(PATCH):
                upstream = continued(cache)
        except RuntimeError as exc:  # 5.18-5.22: a shape error upstream; the same with the patch on
            with pytest.raises(type(exc)):
                continued(prefilled())
            return
        ours = continued(prefilled())
    assert torch.equal(ours, upstream)


class TestPatch(PatchTests):
    """``model-recurrent-gemma-continuation``: its probe proves it on this release; its plain program gets it
    installed."""
