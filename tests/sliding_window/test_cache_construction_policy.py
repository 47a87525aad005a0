"""``hf_genfix.SlidingWindowPolicy``: window, cache alignment and masks from one definition.

The mask is checked against its definition written as plain integer comparisons (a query at position q sees a key
at k when q - W < k <= q, or when both are in the same image block and k > q - W), on random positions, paddings
and blocks; no row a real token owns is ever made all-visible (seed 003's fallback); the mask functions handed to
transformers agree with the dense mask; ``kv_span`` is what the dense mask needs; ``layer_types`` knows the
layouts that predate ``config.layer_types``.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import hf_genfix  # noqa: E402
from hf_genfix.helpers.sliding_window import SlidingWindowPolicy  # noqa: E402


def test_public_name():
    assert hf_genfix.SlidingWindowPolicy is SlidingWindowPolicy


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, None])
def test_a_window_is_a_positive_number_of_tokens(bad):
    with pytest.raises(ValueError):
        SlidingWindowPolicy(bad)


@st.composite
def layouts(draw):
    window = draw(st.integers(1, 6))
    length = draw(st.integers(1, 14))
    pad = draw(st.integers(0, length - 1))
    blocks = [-1] * length
    start = draw(st.integers(pad, length - 1))
    end = draw(st.integers(start, length))
    for i in range(start, end):
        blocks[i] = 0
    return window, length, pad, blocks


@settings(max_examples=200, deadline=None)
@given(layouts(), st.booleans())
def test_dense_mask_is_its_definition(layout, sliding):
    window, length, pad, blocks = layout
    policy = SlidingWindowPolicy(window)
    mask = torch.tensor([[0] * pad + [1] * (length - pad)])
    cols = torch.arange(length)
    got = policy.dense_mask(cols, cols, mask, torch.tensor([blocks]), sliding=sliding)[0]
    for q in range(length):
        for k in range(length):
            in_window = k > q - window or not sliding
            same_block = blocks[q] >= 0 and blocks[q] == blocks[k]
            expected = bool(mask[0, k]) and in_window and (k <= q or same_block)
            assert bool(got[q, k]) == expected, (q, k)
        if q >= pad:
            assert got[q, q], "a real token always sees itself"
            assert got[q].sum() <= (length if not sliding else window + sum(b >= 0 for b in blocks))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 9), st.integers(0, 40), st.integers(1, 9))
def test_kv_span_is_what_the_mask_needs(window, past, q):
    policy = SlidingWindowPolicy(window)
    offset, length = policy.kv_span(past, q)
    queries, keys = torch.arange(past, past + q), torch.arange(past + q)
    needed = policy.dense_mask(queries, keys)[0].any(0).nonzero().flatten()
    assert offset == int(needed.min()) and offset + length == past + q
    assert length <= policy.keys_needed(q) and policy.keys_to_keep == window - 1


def test_mask_functions_agree_with_the_dense_mask():
    """What the patches hand transformers: AND(window, OR(causal, block)) as index functions."""
    policy = SlidingWindowPolicy(3)
    blocks = torch.tensor([[-1, 0, 0, 0, 0, 0, -1, -1]])
    q = torch.arange(8)[:, None]
    k = torch.arange(10)[None, :]  # wider than the ids, as with a static cache
    block, edge = policy.block_overlay(blocks), policy.window_overlay()
    got = edge(0, 0, q, k) & ((k <= q) | block(0, 0, q, k))
    expected = policy.dense_mask(torch.arange(8), torch.arange(10), block_ids=blocks)[0]
    assert torch.equal(got, expected)


def test_no_fallback_makes_keys_visible():
    """A padding query sees nothing; its additive row is finite but no key becomes visible (seed 003)."""
    policy = SlidingWindowPolicy(4)
    mask = torch.tensor([[0, 0, 1, 1, 1, 1]])
    visible = policy.dense_mask(torch.arange(6), torch.arange(6), mask)
    assert not visible[0, 0].any() and not visible[0, 1].any()
    additive = policy.additive(visible)
    assert torch.isfinite(additive).all() and additive.shape == (1, 1, 6, 6)
    assert (additive[0, 0][~visible[0]] == torch.finfo(torch.float32).min).all()


class _Config:
    def __init__(self, **kw):
        self.__dict__.update(kw)


@pytest.mark.parametrize("config, expected", [
    (_Config(model_type="mistral", num_hidden_layers=3, sliding_window=8), ["s", "s", "s"]),
    (_Config(model_type="llama", num_hidden_layers=2, sliding_window=None), ["f", "f"]),
    (_Config(model_type="gemma2", num_hidden_layers=4, sliding_window=8), ["s", "f", "s", "f"]),
    (_Config(model_type="gemma3_text", num_hidden_layers=4, sliding_window=8, sliding_window_pattern=2),
     ["s", "f", "s", "f"]),
    (_Config(model_type="cohere2", num_hidden_layers=4, sliding_window=8, sliding_window_pattern=4),
     ["s", "s", "s", "f"]),
    (_Config(model_type="qwen2", num_hidden_layers=3, sliding_window=8, use_sliding_window=True,
             max_window_layers=1), ["f", "s", "s"]),
    (_Config(model_type="qwen2", num_hidden_layers=2, sliding_window=8, use_sliding_window=False), ["f", "f"]),
    (_Config(model_type="gemma4_text", num_hidden_layers=2, sliding_window=8, num_kv_shared_layers=0,
             layer_types=["sliding_attention", "full_attention"]), ["s", "f"]),
])
def test_layer_types_of_every_layout(config, expected):
    names = {"s": "sliding_attention", "f": "full_attention"}
    assert SlidingWindowPolicy.layer_types(config) == [names[e] for e in expected]
    assert SlidingWindowPolicy.is_hybrid(config) == (len(set(expected)) == 2)


def test_kv_shared_layers_own_no_cache_and_zero_means_none():
    types = ["sliding_attention", "full_attention"] * 2
    shared = _Config(model_type="gemma4_text", num_hidden_layers=4, sliding_window=8, layer_types=types,
                     num_kv_shared_layers=2)
    assert SlidingWindowPolicy.cached_layer_types(shared) == types[:2]
    shared.num_kv_shared_layers = 0
    assert SlidingWindowPolicy.cached_layer_types(shared) == types  # `types[:-0]` is the empty list


def test_from_config_reads_the_text_config():
    transformers = pytest.importorskip("transformers")
    from hf_genfix.oracles.sliding_static import tiny_gemma3_vlm

    try:
        model = tiny_gemma3_vlm()
    except Exception as exc:  # noqa: BLE001 - a release without Gemma-3
        pytest.skip(f"no tiny Gemma-3 on transformers {transformers.__version__}: {exc}")
    assert SlidingWindowPolicy.from_config(model.config) == SlidingWindowPolicy(8)
    with pytest.raises(ValueError):
        SlidingWindowPolicy.from_config(_Config(model_type="llama", sliding_window=None))
