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

TOKENS = (17, 44, 91, 23, 5, 60, 12, 77, 38, 101, 9, 64, 30)
PREFIX = 3
STATED = ("cache_position", "position_ids", "mask-over-cache-and-chunk")


def _chunk_logits(model, how):
    import torch

    from hf_genfix.helpers.decode import cache_from_outputs

    ids = torch.tensor([TOKENS])
    new = torch.arange(PREFIX, len(TOKENS))
    stated = {"cache_position": {"cache_position": new}, "position_ids": {"position_ids": new[None]},
              "mask-over-cache-and-chunk": {"attention_mask": torch.ones_like(ids)}, "nothing": {}}[how]
    with torch.no_grad():
        cache = cache_from_outputs(model(ids[:, :PREFIX], use_cache=True))
        inputs = model.prepare_inputs_for_generation(ids[:, PREFIX:], past_key_values=cache, use_cache=True,
                                                     **stated)
        return model(**inputs).logits


def _reference(model):
    import torch

    with torch.no_grad():
        return model(torch.tensor([TOKENS]), use_cache=False).logits[:, PREFIX:]


@pytest.mark.parametrize("how", STATED)
@pytest.mark.parametrize("arch", ["llama", "gpt2", "phi3", "bloom", "opt"])
def test_chunk_after_cached_prefix_is_fed_whole(arch, how):
    from hf_genfix.oracles import assert_close

    model = model_of(arch)
    skip_known_limit(arch, "chunk")
    plain, patched = with_and_without(lambda: _chunk_logits(model, how))
    assert not isinstance(patched, str), f"{arch}, {how}: {patched} (without hf_genfix: {plain})"
    assert patched.shape[1] == len(TOKENS) - PREFIX, f"{arch}, {how}: only {patched.shape[1]} tokens fed"
    assert_close(patched, _reference(model), f"{arch}: chunk after a cached prefix, {how}")
    if not isinstance(plain, str) and plain.shape == patched.shape and (plain - _reference(model)).abs().max() <= 1e-4:
        import torch

        assert torch.equal(plain, patched), "upstream is right here: hf_genfix must give the identical logits"


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_ambiguous_chunk_follows_transformers_contract(arch):
    # 10 ids after 3 cached positions, no mask, no positions, no cache_position: nothing says whether they are the
    # whole sequence or new tokens. From 5.3 transformers' contract is "already sliced" (all new, right here);
    # before, there is none and the call goes on unchanged: the same result or the same exception as upstream.
    import torch
    from packaging.version import Version

    from hf_genfix.oracles import assert_close

    model = model_of(arch)
    plain, patched = with_and_without(lambda: _chunk_logits(model, "nothing"))
    if release() >= Version("5.3"):
        assert_close(patched, _reference(model), f"{arch}: ambiguous chunk on the 5.3+ contract")
    if isinstance(plain, str) or isinstance(patched, str):
        assert plain == patched
    else:
        assert torch.equal(plain, patched)


def test_ambiguous_call_is_logged_at_debug_level(caplog):
    import logging

    from packaging.version import Version

    model = model_of("llama")
    with caplog.at_level(logging.DEBUG, logger="hf_genfix"):
        with_and_without(lambda: _chunk_logits(model, "nothing"))
    said = [r for r in caplog.records if r.name == "hf_genfix" and "no mask, positions or cache_position" in r.message]
    assert said and all(r.levelno == logging.DEBUG for r in said)
    expected = "taken as new tokens" if release() >= Version("5.3") else "passed on unchanged"
    assert expected in said[0].message
