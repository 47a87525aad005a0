"""Upstream's own contract for ``prepare_inputs_for_generation``, replayed on a tiny local Llama with hf_genfix.

transformers' ``GenerationIntegrationTests::test_prepare_inputs_for_generation_decoder_llm`` (tests/generation/
test_utils.py) pins the method's behaviour for decoder-only models: ids alone come back as they are; a mask
comes back unsliced, with position ids shaped like the ids; extra keyword arguments are forwarded; with a cache,
from 5.3 on, the ids are expected already sliced and are never cut, explicit position ids are kept and the mask
is passed as it came; ``inputs_embeds`` are used for the prompt only. These are our own steps in that order
(not a copy), on a model built from a config. Where the call states what is new, upstream's assertions must hold
with hf_genfix on every release, and the result must be identical to upstream's wherever upstream does not
raise. The one call where upstream's contract and the patch's purpose meet -- three ids after two cached
positions with a three-column mask -- is decided by what the mask says (docs/prepare-inputs.md).
"""

from __future__ import annotations

import pytest

from hf_genfix.helpers.decode import forward_spec
from prepare_inputs_models import model_of, release, skip_known_limit, with_and_without

pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.fixture(autouse=True)
def _generic_method_only():
    # Upstream's contract test is written for the generic method (4.46+); before, Llama's own override neither
    # forwarded extra arguments nor took ids already sliced.
    skip_known_limit("llama", "chunk")


def _key():
    """The keyword this release's prepare_inputs_for_generation takes the cache under (5.24 deprecates the other)."""
    from hf_genfix.oracles.decode import prepare_cache_keyword

    return prepare_cache_keyword()


def _ids():
    import torch

    return torch.tensor([[5, 6, 7], [8, 9, 10]])


def _cache_of(model, ids):
    import torch

    from hf_genfix.helpers.decode import cache_from_outputs

    with torch.no_grad():
        return cache_from_outputs(model(ids, use_cache=True))


def _same(a, b) -> bool:
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a is b or a == b


def _check(call, *assertions):
    """Run ``call`` with and without hf_genfix; ``assertions`` hold on hf_genfix's result, which equals
    upstream's wherever upstream returns one."""
    plain, patched = with_and_without(call)
    assert not isinstance(patched, str), f"hf_genfix raised {patched} (upstream: {plain})"
    for assertion in assertions:
        assertion(patched)
    if not isinstance(plain, str):
        # 4.46 - 5.2: hf_genfix completes the cache_position generate() passes; where upstream answers without
        # it, the forward computes that same range itself (checked here), so the key alone may differ.
        ours, theirs = dict(patched), dict(plain)
        completed, given = ours.pop("cache_position", None), theirs.pop("cache_position", None)
        if given is not None:
            assert _same(given, completed)
        elif completed is not None:
            import torch

            fed = ours.get("input_ids") if ours.get("input_ids") is not None else ours["inputs_embeds"][..., 0]
            assert torch.equal(completed, torch.arange(int(completed[0]), int(completed[0]) + fed.shape[1]))
        assert _same(theirs, ours), "upstream answers this call: hf_genfix must return the identical inputs"
    return patched


def test_ids_alone_come_back_unchanged():
    import torch

    model, ids = model_of("llama"), _ids()
    _check(lambda: model.prepare_inputs_for_generation(ids),
           lambda out: torch.equal(out["input_ids"], ids) or pytest.fail("ids changed"))


def test_mask_comes_back_unsliced():
    import torch

    model, ids = model_of("llama"), _ids()
    mask = torch.ones_like(ids)

    def shaped_like_ids(out):
        assert torch.equal(out["attention_mask"], mask)
        if out.get("position_ids") is not None:
            assert out["position_ids"].shape == ids.shape

    _check(lambda: model.prepare_inputs_for_generation(ids, attention_mask=mask), shaped_like_ids)


def test_extra_keyword_arguments_are_forwarded():
    model, ids = model_of("llama"), _ids()

    def forwarded(out):
        assert out["use_cache"] is True and out["foo"] == "bar"

    _check(lambda: model.prepare_inputs_for_generation(ids, use_cache=True, foo="bar"), forwarded)


@pytest.mark.parametrize("with_mask", [True, False], ids=["mask-over-cache-and-ids", "no-mask"])
@pytest.mark.parametrize("chunk", [1, 3], ids=["one-token", "three-tokens"])
def test_already_sliced_ids_are_never_cut(chunk, with_mask):
    # The cache holds 2 tokens; the caller passes only the new ones, with a mask over cache + new tokens or none.
    import torch
    from packaging.version import Version

    if not with_mask and chunk > 2 and release() < Version("5.3"):
        pytest.skip("before 5.3 transformers has no 'already sliced' contract: 3 ids after 2 cached positions and "
                    "nothing else go on unchanged, upstream's TypeError on 4.46 - 5.2 (test_chunks.py compares)")
    model, ids = model_of("llama"), torch.tensor([[5, 6, 7, 11, 12], [8, 9, 10, 13, 14]])
    cache = _cache_of(model, ids[:, :2])
    new_ids = ids[:, 2:2 + chunk]
    mask = {"attention_mask": torch.ones_like(ids[:, :2 + chunk])} if with_mask else {}

    def kept(out):
        assert torch.equal(out["input_ids"], new_ids), f"{chunk} ids cut to {out['input_ids'].shape[1]}"
        if with_mask:
            assert torch.equal(out["attention_mask"], mask["attention_mask"]), "the mask must come as it was given"

    _check(lambda: model.prepare_inputs_for_generation(new_ids, **{_key(): cache}, use_cache=True, **mask), kept)


def test_explicit_position_ids_are_kept():
    import torch

    model, ids = model_of("llama"), torch.tensor([[5, 6, 7, 11, 12], [8, 9, 10, 13, 14]])
    cache = _cache_of(model, ids[:, :2])
    positions = torch.arange(2, 5).expand(2, 3)

    def kept(out):
        assert out["input_ids"].shape[1] == 3, "ids cut"
        assert torch.equal(out["position_ids"], positions), "explicit position ids changed"

    _check(lambda: model.prepare_inputs_for_generation(ids[:, 2:], **{_key(): cache}, position_ids=positions,
                                                       use_cache=True), kept)


@pytest.mark.parametrize("chunk", [1, 3], ids=["one-token", "three-tokens"])
def test_static_cache_gets_a_mask_for_the_new_tokens_only(chunk):
    # A static cache of 10 slots holding 2 tokens: the mask over cache + new tokens becomes a 4-D mask of
    # (batch, 1, new tokens, 10) where the release builds one for compileable caches.
    import inspect

    import torch
    from transformers import StaticCache

    model, ids = model_of("llama"), torch.tensor([[5, 6, 7, 11, 12], [8, 9, 10, 13, 14]])
    # Releases that size the cache up front name max_batch_size; 4.55's StaticCache(*args, **kwargs) forwards it to
    # Cache.__init__, which needs it there too (its StaticLayer takes a batch size).
    params = inspect.signature(StaticCache.__init__).parameters
    forwards = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params.values())
    batch = {"max_batch_size": 2} if "max_batch_size" in params or forwards else {}
    static = StaticCache(config=model.config, max_cache_len=10, **batch)
    with torch.no_grad():
        model(ids[:, :2], **{forward_spec(model).cache_key: static}, use_cache=True)
    new_ids, mask = ids[:, 2:2 + chunk], torch.ones_like(ids[:, :2 + chunk])

    def shaped(out):
        assert torch.equal(out["input_ids"], new_ids)
        built = out["attention_mask"]
        if isinstance(built, torch.Tensor) and built.ndim == 4:
            assert tuple(built.shape[-2:]) == (chunk, 10)

    _check(lambda: model.prepare_inputs_for_generation(new_ids, **{_key(): static}, attention_mask=mask,
                                                       use_cache=True), shaped)


def test_prompt_from_embeddings_then_ids():
    # The prompt as inputs_embeds on an empty cache, then the ids once the prompt is cached.
    import inspect

    import torch
    from transformers import DynamicCache, GenerationMixin

    model, ids = model_of("llama"), _ids()
    embeds = model.get_input_embeddings()(ids[:, :2]).detach()
    first = {"is_first_iteration": True} if "is_first_iteration" in inspect.signature(
        GenerationMixin.prepare_inputs_for_generation).parameters else {}
    takes_position = "cache_position" in inspect.signature(GenerationMixin.prepare_inputs_for_generation).parameters
    prompt_position = {"cache_position": torch.arange(2)} if takes_position else {}

    def embeds_only(out):
        assert out.get("input_ids") is None and torch.equal(out["inputs_embeds"], embeds)

    empty = DynamicCache()
    _check(lambda: model.prepare_inputs_for_generation(ids[:, :2], **{_key(): empty},
                                                       inputs_embeds=embeds, **first, **prompt_position),
           embeds_only)
    cache = _cache_of(model, ids[:, :2])

    def ids_only(out):
        assert out.get("input_ids") is not None and out.get("inputs_embeds") is None

    _check(lambda: model.prepare_inputs_for_generation(ids[:, 2:], **{_key(): cache}, inputs_embeds=embeds,
                                                       attention_mask=torch.ones_like(ids)), ids_only)


def test_a_mask_as_wide_as_the_ids_says_they_are_the_whole_sequence():
    # The conflict: 3 ids, 2 cached positions, a 3-column mask and nothing else. Upstream (5.3+) reads "already
    # sliced" and feeds all three; but three new tokens after two cached ones need a 5-column mask, so this mask
    # describes the whole sequence and only its last token is new. That is the hand-written loop the patch is
    # for: hf_genfix feeds one token, and its logits equal a no-cache forward.
    import torch

    from hf_genfix.oracles import assert_close

    model, ids = model_of("llama"), _ids()
    cache = _cache_of(model, ids[:, :2])
    with torch.no_grad():
        out = model(**model.prepare_inputs_for_generation(ids, **{_key(): cache}, attention_mask=torch.ones_like(
            ids), use_cache=True))
        expected = model(ids, use_cache=False).logits[:, -1]
    assert out.logits.shape[1] == 1
    assert_close(out.logits[:, -1], expected, f"llama on {release()}: whole sequence with a mask as wide")
