"""model-zamba2-chunk-scan: Zamba2's Mamba scan past its first chunk and after a cache (4.49 - 5.14, torch path).

The oracle is a definition: the result cannot depend on the chunk size. The reference is the same model with one
chunk covering the whole sequence (upstream's chunk path is right for one chunk from a zero state), every row alone
and without a cache. Where the patch applies: a no-cache forward, a cached generate() of one row and of a batch whose
left padding reaches past the first chunk, and several tokens after a cache all match it, and the same calls with the
patch off show the defect; prompts within one chunk leave generate() bitwise upstream's.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix import catalog  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps, left_pad  # noqa: E402
from hf_genfix.oracles.reference import max_diff  # noqa: E402
from hf_genfix.oracles.sweep.continuations import loud_model  # noqa: E402

from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise  # noqa: E402

one_chunk = catalog.probe_module("model-zamba2-chunk-scan").one_chunk

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PATCH = "model-zamba2-chunk-scan"
ROW = [17, 44, 91, 23, 5, 60, 12, 77, 30, 9, 3, 4, 8, 99]


def _zamba2():
    try:
        return loud_model("zamba2", chunk_size=4, use_mem_rope=True)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def _skip_unless_applied() -> None:
    from hf_genfix.doctor import import_targets

    import_targets()  # an armed patch installs when its module is imported
    if next(s for s in hf_genfix.status() if s.id == PATCH).state not in ("applied", "forced"):
        pytest.skip(f"{PATCH} does not apply to this release")


def _cached(model, rows, new: int = 4):
    run = generate_steps(model, *left_pad(rows), max_new_tokens=new, min_new_tokens=new, pad_token_id=0,
                         eos_token_id=None)
    with one_chunk(model, max(map(len, rows)) + new):
        return check_rows_against_reference(model, rows, run, "zamba2 (chunk 4) cached generate()", eos_token_id=[])


def _forward_gap(model, ids) -> float:
    import torch

    with torch.no_grad():
        chunked = model(ids, use_cache=False).logits
        with one_chunk(model, ids.shape[1]):
            return max_diff(chunked, model(ids, use_cache=False).logits)


def _after_cache_gap(model, prefix: int = 6) -> float:
    """Several tokens fed after a cached prefix (what a second turn and chunked prefill do) against the reference."""
    import torch

    ids = torch.tensor([ROW])
    with torch.no_grad():
        first = model(ids[:, :prefix], attention_mask=torch.ones(1, prefix, dtype=torch.long), use_cache=True)
        rest = model(ids[:, prefix:], past_key_values=first.past_key_values, use_cache=True,
                     attention_mask=torch.ones_like(ids), cache_position=torch.arange(prefix, ids.shape[1]))
        with one_chunk(model, ids.shape[1]):
            reference = model(ids, use_cache=False).logits
    return max_diff(rest.logits, reference[:, prefix:])


@pytest.mark.parametrize("rows", [[ROW[:10]], [ROW[:10], ROW[:3], ROW[4:11]]], ids=["one-row", "left-padded"])
def test_a_cached_generate_matches_one_chunk(rows):
    _skip_unless_applied()
    assert _cached(_zamba2(), rows)["max_logit_diff"] <= 1e-4


def test_a_no_cache_forward_and_tokens_after_a_cache_match_one_chunk():
    import torch

    _skip_unless_applied()
    model = _zamba2()
    assert _forward_gap(model, torch.tensor([ROW])) <= 1e-4
    assert _after_cache_gap(model) <= 1e-4


def test_without_the_patch_each_path_is_wrong():
    import torch

    _skip_unless_applied()
    model = _zamba2()
    with hf_genfix.disabled(PATCH):
        assert _forward_gap(model, torch.tensor([ROW])) > 0.1
        with pytest.raises(DefectObserved) as caught:
            _cached(model, [ROW[:10]])
        assert caught.value.figures["max_logit_diff"] > 0.1
        try:
            gap = _after_cache_gap(model)
        except RuntimeError:  # the one-token path given several tokens may also fail on shapes: loud either way
            return
        assert gap > 0.1


def test_prompts_within_one_chunk_are_upstreams():
    import torch

    _skip_unless_applied()
    ids = torch.tensor([ROW[:10], [0, 0] + ROW[:8]])
    model = _zamba2()
    with one_chunk(model, 16):  # the prompt within one chunk; decoding steps are single tokens
        assert_upstream_bitwise(model, PATCH, ids, attention_mask=(ids != 0).long())


def test_a_left_padded_batch_prefilled_in_chunks_matches_each_row():
    """generate(prefill_chunk_size=4) on rows of 13, 5 and 9 tokens (the sweep's scenario): the pads of the short
    rows continue after the first chunk's cached state, in rows that have seen nothing else. Upstream (4.x: refused
    in words) is wrong where it runs it (2.01 on 5.12.0)."""
    from hf_genfix.oracles import sweep

    _skip_unless_applied()
    subject = sweep.Subject("zamba2")
    ours = sweep.observe(sweep.SCENARIOS["left-padded-chunked-prefill"], subject)
    if ours.outcome == "skipped":  # before 4.51 generate() has no prefill_chunk_size
        pytest.skip(ours.message)
    if ours.outcome == "raised":
        # 4.x refuses chunked prefill without a cache in words; 5.13-5.14 fail on a shape: loud upstream too, and
        # the same exception with every patch off (never turned into a silently wrong answer, nor into a new error)
        with hf_genfix.disabled():
            theirs = sweep.observe(sweep.SCENARIOS["left-padded-chunked-prefill"], subject)
        assert theirs.outcome == "raised" and theirs.message.split(":")[0] == ours.message.split(":")[0], theirs
        return
    assert ours.outcome == "pass", ours.message


class TestPatch(PatchTests):
    """``model-zamba2-chunk-scan``: its probe proves it on this release; its plain program gets it installed."""
