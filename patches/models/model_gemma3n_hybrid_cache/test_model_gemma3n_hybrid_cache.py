"""``model-gemma3n-hybrid-cache`` (4.53-4.55): "hybrid" on Gemma-3n is served as a full static cache, and a cache the
user made that the KV-sharing layers would read by clamped positions refuses several tokens past the window.

Where the patch is applied: generate(cache_implementation="hybrid") gives the tokens and logits of the default cache
(and upstream's differ or raise); "sliding_window" too; a HybridCache fed a prompt past the window raises
``Gemma3nHybridCacheUnsupported`` and takes one token at a time as upstream; a model without KV sharing gets
upstream's call. Elsewhere the tests skip (``PatchTests``).
"""

from __future__ import annotations

import contextlib

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PID = "model-gemma3n-hybrid-cache"
WINDOW = 8


class TestPatch(PatchTests):
    """``model-gemma3n-hybrid-cache``: its probe proves it on this release; its plain program installs it."""


@pytest.fixture(scope="module")
def model():
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep.continuations import loud_model

    # A module fixture is set up before require_applied decides: a release without Gemma-3n (before 4.53) skips
    # here, with the reason, instead of erroring.
    try:
        return loud_model("gemma3n_text", sliding_window=WINDOW)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


@pytest.fixture
def gemma3n(require_applied, model):
    require_applied(PID)
    vars(model).pop("_cache", None)
    return model


def _ids(n):
    import torch

    return torch.randint(3, 128, (1, n), generator=torch.Generator().manual_seed(5))


def _generate(model, ids, **kwargs):
    import torch

    vars(model).pop("_cache", None)
    with torch.no_grad():
        return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=5, do_sample=False,
                              pad_token_id=0, eos_token_id=None, return_dict_in_generate=True, output_logits=True,
                              **kwargs)


def _diff(a, b):
    return max((x - y).abs().max().item() for x, y in zip(a.logits, b.logits))


@pytest.mark.parametrize("name", ["hybrid", "sliding_window"])
def test_a_window_cache_asked_for_gives_the_default_caches_answer(gemma3n, name):
    import torch

    ids = _ids(2 * WINDOW - 3)
    reference = _generate(gemma3n, ids)
    out = _generate(gemma3n, ids, cache_implementation=name)
    assert torch.equal(out.sequences, reference.sequences) and _diff(out, reference) < 1e-4
    try:
        with hf_genfix.disabled(PID, "sliding-window-hybrid-cache"):
            upstream = _generate(gemma3n, ids, cache_implementation=name)
    except (AttributeError, IndexError):  # 4.54's HybridCache; "sliding_window" on 4.53-4.54
        return
    assert _diff(upstream, reference) > 1e-2  # the defect, loud on this model


def test_a_prompt_within_the_window_is_upstreams_call(gemma3n):
    import torch

    ids = _ids(WINDOW - 3)  # decodes past the window one token at a time: right upstream on 4.53 and 4.55
    out = _generate(gemma3n, ids, cache_implementation="hybrid")
    reference = _generate(gemma3n, ids)
    assert torch.equal(out.sequences, reference.sequences) and _diff(out, reference) < 1e-4


def _hybrid_cache(model, length):
    import transformers.cache_utils as cu

    if not hasattr(cu, "HybridCache"):
        pytest.skip("no HybridCache on this release")
    try:
        return cu.HybridCache(config=model.config, max_batch_size=1, max_cache_len=length)
    except TypeError:
        return cu.HybridCache(model.config, 1, length)


def test_a_hybrid_cache_the_user_made_refuses_a_prompt_past_the_window(gemma3n):
    import torch

    from hf_genfix._patches.models.model_gemma3n_hybrid_cache.fix import Gemma3nHybridCacheUnsupported

    ids = _ids(WINDOW + 5)
    cache = _hybrid_cache(gemma3n, 32)
    try:
        with torch.no_grad(), hf_genfix.disabled(PID):
            gemma3n(ids, past_key_values=_hybrid_cache(gemma3n, 32), use_cache=True)
    except AttributeError:
        pytest.skip("upstream cannot read this release's HybridCache window (4.54): its error stays")
    with pytest.raises(Gemma3nHybridCacheUnsupported, match="HF_GENFIX_MODEL_GEMMA3N_HYBRID_CACHE=off"):
        with torch.no_grad():
            gemma3n(ids, past_key_values=cache, use_cache=True)


def test_a_hybrid_cache_fed_one_token_at_a_time_is_upstreams(gemma3n):
    import torch

    ids = _ids(WINDOW + 4)
    steps = []
    for cache_of in ("patched", "upstream"):
        cache = _hybrid_cache(gemma3n, 32)
        logits = []
        try:
            with torch.no_grad(), (hf_genfix.disabled(PID) if cache_of == "upstream" else contextlib.nullcontext()):
                for i in range(ids.shape[1]):
                    logits.append(gemma3n(ids[:, i:i + 1], past_key_values=cache, use_cache=True,
                                          cache_position=torch.tensor([i])).logits)
        except AttributeError:
            pytest.skip("upstream cannot read this release's HybridCache window (4.54)")
        steps.append(torch.cat(logits, 1))
    assert torch.equal(steps[0], steps[1])
    with torch.no_grad():
        full = gemma3n(ids, use_cache=True).logits
    assert (steps[0] - full).abs().max().item() < 1e-4


def test_a_model_without_kv_sharing_keeps_hybrid(require_applied):
    from hf_genfix.oracles.sweep.continuations import loud_model

    require_applied(PID)
    plain = loud_model("gemma3n_text", sliding_window=WINDOW, num_kv_shared_layers=0)
    ids = _ids(2 * WINDOW)
    out = _generate(plain, ids, cache_implementation="hybrid")
    with hf_genfix.disabled(PID):
        upstream = _generate(plain, ids, cache_implementation="hybrid")
    import torch

    assert torch.equal(out.sequences, upstream.sequences) and _diff(out, upstream) == 0
