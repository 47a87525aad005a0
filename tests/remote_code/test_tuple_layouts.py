"""Tuple caches of old remote code in layouts other than [batch, heads, seq, dim]: recognised from what the model
returns, handed back exactly, and a layout that cannot be told fails loudly (remote-code-cache-api)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_genfix.toolkit.tuple_caches import LayoutUnknown, detect  # noqa: E402

B, H, S, D = 3, 4, 6, 8
LAYOUTS = {  # what old remote code returned per layer, for batch B, H heads, S positions, head dim D
    "[b, h, s, d]": lambda: (torch.randn(B, H, S, D), torch.randn(B, H, S, D)),
    "[s, b, h, d] (ChatGLM2)": lambda: (torch.randn(S, B, H, D), torch.randn(S, B, H, D)),
    "[b, s, h, d] (Qwen-1)": lambda: (torch.randn(B, S, H, D), torch.randn(B, S, H, D)),
    "[b, h, d, s] key (MPT)": lambda: (torch.randn(B, H, D, S), torch.randn(B, H, S, D)),
    "[b, s, hidden]": lambda: (torch.randn(B, S, H * D), torch.randn(B, S, H * D)),
    "[b * h, d, s] key (Bloom)": lambda: (torch.randn(B * H, D, S), torch.randn(B * H, S, D)),
    "[b * h, s, d] (Falcon RW)": lambda: (torch.randn(B * H, S, D), torch.randn(B * H, S, D)),
    "[2, b, h, s, d] stacked": lambda: torch.randn(2, B, H, S, D),
}


@pytest.mark.parametrize("name", LAYOUTS)
def test_each_layout_goes_into_the_cache_batch_first_and_comes_back_exactly(name):
    layer = LAYOUTS[name]()
    layouts = detect([layer, layer], B, S, {H})
    assert not isinstance(layouts, str), layouts
    assert len(layouts) == 1
    key, value = layouts[0].to_cache(layer, B)
    assert key.shape[0] == B and key.shape[-2] == S
    back = layouts[0].to_model(key, value)
    if isinstance(layer, tuple):
        assert all(torch.equal(a, b) for a, b in zip(back, layer))
    else:
        assert torch.equal(back, layer)
    # The batch is dimension 0 of the cache: row i of the cache is row i of the model's tensors.
    row_key, row_value = layouts[0].to_cache(_row(layer, name), 1)
    assert torch.equal(key[1:2], row_key) and torch.equal(value[1:2], row_value)


def _row(layer, name):
    """Row 1 of the batch, in the model's layout."""
    def one(t, dim, merged=False):
        if merged:
            return t.unflatten(0, (B, -1))[1:2].flatten(0, 1)
        return t.narrow(dim, 1, 1)
    if name.startswith("[s, b"):
        return tuple(one(t, 1) for t in layer)
    if name.startswith("[b * h"):
        return tuple(one(t, 0, merged=True) for t in layer)
    if name.startswith("[2, b"):
        return one(layer, 1)
    return tuple(one(t, 0) for t in layer)


def test_a_sequence_as_long_as_another_dimension_leaves_candidates_for_the_next_forward():
    layer = (torch.randn(B, D, H, D), torch.randn(B, D, H, D))  # Qwen-1 layout, prompt length == head dim
    assert len(detect([layer], B, D, {H})) == 4  # dims 1 and 3 of the key, and of the value


def test_a_layout_that_cannot_be_told_is_named_with_the_patch_and_its_switch():
    from hf_genfix.toolkit.tuple_caches import recognise

    cls = type("NoBatchModel", (), {})
    with pytest.raises(LayoutUnknown, match="NoBatchModel.*HF_GENFIX_REMOTE_CODE_CACHE_API=off"):
        recognise(cls, None, [(torch.randn(5, H, S, D),) * 2], B, S, object())


def test_chatglm2_with_a_prompt_as_long_as_the_batch_fails_loudly(tmp_path):
    """[seq, batch, heads, dim] with seq == batch: the candidates disagree on the batch, so hf_genfix raises (as
    upstream does there) rather than generate from a cache it may have laid out wrong."""
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.legacy_models import check_family

    if not in_range(">=4.54.0,!=5.0.*", transformers_version()):  # generate() hands the model its own tuples
        check_family("chatglm2", tmp_path, rows=((17, 44), (60, 12)))
        return
    with pytest.raises(DefectObserved, match="LayoutUnknown.*HF_GENFIX_REMOTE_CODE_CACHE_API=off"):
        check_family("chatglm2", tmp_path, rows=((17, 44), (60, 12)))


def test_a_forward_that_does_not_grow_its_past_by_the_tokens_fed_raises():
    from transformers import DynamicCache

    from hf_genfix.toolkit import tuple_caches as _tuple_layout
    from hf_genfix import catalog
    _tuples_into = catalog.fix('remote-code-cache-api')._tuples_into

    model = type("StaleModel", (), {"config": None})()
    cache = DynamicCache()
    past = ((torch.randn(2, 5, H, D), torch.randn(2, 5, H, D)),)  # Qwen-1 layout, 5 positions
    _tuples_into({"past_key_values": past}, cache, model, (2, 5))
    assert cache.get_seq_length() == 5 and _tuple_layout.known(type(model)) is not None
    with pytest.raises(LayoutUnknown, match="StaleModel.*6 positions"):
        _tuples_into({"past_key_values": past}, cache, model, (2, 1))  # one token fed, nothing appended


@pytest.mark.parametrize("family", ["qwen", "bloom", "stacked", "chatglm2"])
def test_beam_search_with_a_prompt_as_long_as_the_head_dim_equals_it_without_cache(family, tmp_path):
    """8 tokens (the tiny families' head dim) on a batch of 2 x 2 beams (their head count): the prefill leaves two
    candidate sequence dims, settled by the first decode step after the cache was reordered by beam."""
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.oracles.legacy_models import load_family, write_family

    model = load_family(write_family(family, tmp_path / f"{family}_{tmp_path.name}"))
    ids = torch.tensor([[5, 6, 7, 8, 9, 10, 11, 12], [13, 14, 15, 16, 17, 18, 19, 20]])
    kwargs = dict(num_beams=2, do_sample=False, max_new_tokens=5, pad_token_id=0, attention_mask=torch.ones_like(ids))
    with torch.no_grad():
        reference = model.generate(ids, use_cache=False, **kwargs)
        cached = model.generate(ids, use_cache=True, **kwargs)
    assert torch.equal(cached, reference)
    if in_range(">=4.54.0,!=5.0.*", transformers_version()):  # the releases where the patch hands tuples over
        from hf_genfix.toolkit.tuple_caches import known

        assert known(type(model)) is not None


def test_cache_class_code_whose_cache_does_not_grow_by_the_tokens_fed_fails_loudly(tmp_path):
    """The same check for 4.36 - 4.40 cache-class code (phi3 family): a cache that drops what the model stores."""
    from transformers import DynamicCache

    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.toolkit.tuple_caches import CacheMismatch
    from hf_genfix.oracles.legacy_models import load_family, write_family

    if not in_range(">=4.54.0", transformers_version()):
        pytest.skip("remote-code-cache-api is not installed before 4.54")
    model = load_family(write_family("phi3", tmp_path / f"phi3_{tmp_path.name}"))
    ids = torch.tensor([[5, 6, 7, 8, 9]])
    with torch.no_grad():
        good = DynamicCache()
        model(input_ids=ids, past_key_values=good, use_cache=True)
        assert good.get_seq_length() == 5
        dropping = DynamicCache()
        dropping.update = lambda key, value, *args, **kwargs: (key, value)  # stores nothing
        with pytest.raises(CacheMismatch, match="Phi3ForCausalLM.*0 positions in the cache, not 5"):
            model(input_ids=ids, past_key_values=dropping, use_cache=True)
