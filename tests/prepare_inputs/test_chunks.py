"""Issue 10 item 3: a chunk fed after a cached prefix keeps every token the caller says is new.

A cache holds a 3-token prefix (a system prompt, an earlier turn); the caller feeds the next 10 tokens through
``prepare_inputs_for_generation`` and ``forward``. The logits of the chunk must equal those positions of a
no-cache forward over all 13 tokens. What tells the method that the 10 ids are new: ``cache_position``
``arange(3, 13)``, ``position_ids`` ``arange(3, 13)``, a mask over cache + chunk (13 columns), or nothing (the
ambiguous call: transformers' own contract decides, docs/prepare-inputs.md).
"""

from __future__ import annotations

import pytest

from prepare_inputs_models import model_of, release, skip_known_limit, with_and_without

pytest.importorskip("torch")
pytest.importorskip("transformers")

STATED = ("cache_position", "position_ids", "mask-over-cache-and-chunk")


@pytest.mark.parametrize("how", STATED)
@pytest.mark.parametrize("arch", ["llama", "gpt2", "phi3", "bloom", "opt"])
def test_chunk_after_cached_prefix_is_fed_whole(arch, how):
    import torch

    from hf_genfix.oracles.decode import chunk_after_cache, check_chunk_after_cache

    model = model_of(arch)
    skip_known_limit(arch, "chunk")
    check_chunk_after_cache(model, how)
    plain, patched = with_and_without(lambda: chunk_after_cache(model, how))
    if not isinstance(plain, str) and plain[0].shape == plain[1].shape and (plain[0] - plain[1]).abs().max() <= 1e-4:
        assert torch.equal(plain[0], patched[0]), "upstream is right here: hf_genfix must give the identical logits"


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_ambiguous_chunk_follows_transformers_contract(arch):
    # 10 ids after 3 cached positions, no mask, no positions, no cache_position: nothing says whether they are the
    # whole sequence or new tokens. From 5.3 transformers' contract is "already sliced" (all new, right here);
    # before, there is none and the call goes on unchanged: the same result or the same exception as upstream.
    import torch
    from packaging.version import Version

    from hf_genfix.oracles.decode import chunk_after_cache, check_chunk_after_cache

    model = model_of(arch)
    if release() >= Version("5.3"):
        check_chunk_after_cache(model, "nothing")
    plain, patched = with_and_without(lambda: chunk_after_cache(model, "nothing"))
    if isinstance(plain, str) or isinstance(patched, str):
        assert plain == patched
    else:
        assert torch.equal(plain[0], patched[0])


def test_ambiguous_call_is_logged_at_debug_level(caplog):
    import logging

    from packaging.version import Version

    from hf_genfix.oracles.decode import chunk_after_cache

    model = model_of("llama")
    with caplog.at_level(logging.DEBUG, logger="hf_genfix"):
        with_and_without(lambda: chunk_after_cache(model, "nothing"))
    said = [r for r in caplog.records if r.name == "hf_genfix" and "no mask, positions or cache_position" in r.message]
    assert said and all(r.levelno == logging.DEBUG for r in said)
    expected = "taken as new tokens" if release() >= Version("5.3") else "passed on unchanged"
    assert expected in said[0].message


def test_a_mask_as_wide_as_the_ids_is_read_as_the_whole_sequence_and_said_at_debug_level(caplog):
    # Issue 23: a chunk of new ids with a mask over the chunk only has the shapes of a 4.x loop's call (whole ids,
    # the mask over them), which hf_genfix reads as the 4.x contract did. The reading is logged at debug level.
    import logging

    import torch

    from hf_genfix.helpers.decode import cache_from_outputs
    from hf_genfix.oracles.decode import prepare_cache_keyword

    model = model_of("llama")
    ids = torch.tensor([[17, 44, 91, 23, 5, 60, 12, 77, 38, 101]])
    with torch.no_grad():
        cache = cache_from_outputs(model(ids[:, :3], use_cache=True))
    with caplog.at_level(logging.DEBUG, logger="hf_genfix"):
        inputs = model.prepare_inputs_for_generation(ids, **{prepare_cache_keyword(): cache},
                                                     attention_mask=torch.ones_like(ids))
    assert inputs["input_ids"].shape[1] == 7
    said = [r for r in caplog.records if r.name == "hf_genfix" and "taken as the whole sequence" in r.message]
    assert said and all(r.levelno == logging.DEBUG for r in said)


@pytest.mark.parametrize("cut, passes", [(False, True), (True, False)])
def test_a_model_that_keeps_only_the_last_logits_is_checked_on_every_fed_token(monkeypatch, cut, passes):
    """Falcon-H1's prepare_inputs_for_generation sets logits_to_keep = config.num_logits_to_keep (1): the chunk is
    fed whole, only the head's output is sliced. The check keeps every position's logits (the sweep reported "1 of 10
    tokens fed" on 5.24.0, a false alarm); a chunk really cut to its last token still fails."""
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.decode import check_chunk_after_cache

    model = model_of("llama")
    original = type(model).prepare_inputs_for_generation

    def keeps_one(self, input_ids, **kwargs):
        inputs = original(self, input_ids[:, -1:] if cut else input_ids, **kwargs)
        inputs["logits_to_keep"] = 1
        return inputs

    monkeypatch.setattr(model, "prepare_inputs_for_generation", keeps_one.__get__(model))
    if passes:
        assert check_chunk_after_cache(model)["steps_compared"] == 10
    else:
        with pytest.raises(DefectObserved):
            check_chunk_after_cache(model)
