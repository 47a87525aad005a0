"""``model-gemma3n-uncached-kv-sharing`` (4.53-5.5): without a cache, the text model runs the cached path (a cache of
its own, dropped from the output), so its KV-sharing layers reuse the shared keys and values.

Where the patch is applied: a forward and generate() with ``use_cache=False`` equal the cached ones bit for bit and
return no cache (and differ without the patch); training mode matches too and back-propagates; training with
gradient checkpointing is upstream's call, with one warning. Elsewhere the tests skip (``PatchTests``).
"""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PID = "model-gemma3n-uncached-kv-sharing"


class TestPatch(PatchTests):
    """``model-gemma3n-uncached-kv-sharing``: its probe proves it on this release; its plain program installs it."""


@pytest.fixture
def gemma3n(require_applied):
    from hf_genfix.oracles.sweep.continuations import loud_model

    require_applied(PID)
    return loud_model("gemma3n_text")


IDS = [[3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26]]


def test_an_uncached_forward_is_the_cached_one_and_returns_no_cache(gemma3n):
    import torch

    ids = torch.tensor(IDS)
    with torch.no_grad():
        cached = gemma3n(ids, use_cache=True).logits
        out = gemma3n(ids, use_cache=False)
        with hf_genfix.disabled(PID):
            upstream = gemma3n(ids, use_cache=False)
    assert torch.equal(out.logits, cached)
    assert out.past_key_values is None and "past_key_values" not in out.keys()
    assert type(out) is type(upstream) and list(out.keys()) == list(upstream.keys())
    assert (upstream.logits - cached).abs().max().item() > 1e-2  # the defect, loud on this model


def test_generate_without_a_cache_gives_the_cached_tokens(gemma3n):
    import torch

    ids = torch.tensor(IDS)
    common = dict(max_new_tokens=5, do_sample=False, pad_token_id=0, eos_token_id=None,
                  attention_mask=torch.ones_like(ids), return_dict_in_generate=True, output_logits=True)
    with torch.no_grad():
        cached = gemma3n.generate(ids, use_cache=True, **common)
        uncached = gemma3n.generate(ids, use_cache=False, **common)
    assert torch.equal(cached.sequences, uncached.sequences)
    assert max((a - b).abs().max().item() for a, b in zip(cached.logits, uncached.logits)) < 1e-4


def test_training_mode_shares_and_back_propagates(gemma3n):
    import torch

    ids = torch.tensor(IDS)
    with torch.no_grad():
        reference = gemma3n(ids, use_cache=True).logits
    gemma3n.train()
    try:
        out = gemma3n(ids, labels=ids)
        out.loss.backward()
    finally:
        gemma3n.eval()
        gemma3n.zero_grad(set_to_none=True)
    assert out.past_key_values is None
    assert (out.logits.detach() - reference).abs().max().item() < 1e-4


def test_gradient_checkpointing_is_upstreams_call_with_a_warning(gemma3n):
    import torch

    from hf_genfix import HFGenfixWarning
    from hf_genfix.toolkit import forget_warnings

    ids = torch.tensor(IDS)
    forget_warnings(PID)
    gemma3n.gradient_checkpointing_enable()
    gemma3n.train()
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            ours = gemma3n(ids, use_cache=False).logits.detach()
        with hf_genfix.disabled(PID):
            upstream = gemma3n(ids, use_cache=False).logits.detach()
    finally:
        gemma3n.gradient_checkpointing_disable()
        gemma3n.eval()
    assert torch.equal(ours, upstream)
    assert any(issubclass(w.category, HFGenfixWarning) and "gradient checkpointing" in str(w.message) for w in seen)
