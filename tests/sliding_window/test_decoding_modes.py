"""Decoding modes that rewind or chunk a sliding-window cache, far past the window, on the installed release.

With hf_genfix active (its patches decided for this release), on tiny models with ``sliding_window=8``:

- assisted decoding with 1- and 5-token drafts, prompt lookup and Gemma-4 MTP drafting give exactly plain
  greedy's tokens, and their per-step logits match a no-cache forward of the final sequence
  (``oracles.sliding.check_same_as_greedy``);
- chunked prefill (batch 1 and a left-padded batch of 3) matches the no-cache forward at every step
  (``oracles.sliding.check_past_window``).

Runs go 3x to 16x past the window, with eager and sdpa attention. The patches that make this hold are
sliding-window-dynamic-full (5.12-5.13), sliding-window-rollback-cache (4.56, 5.0), sliding-window-draft-keys
(5.15-5.17) and sliding-window-prefill-chunks (5.0-5.2); a scenario the release cannot run is skipped with the
reason.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hf_genfix.oracles import ProbeSkipped  # noqa: E402
from hf_genfix.oracles import sliding as sw  # noqa: E402
from cache_construction_models import model, patches_decided, release  # noqa: E402,F401

W = sw.WINDOW


def _skip_unsupported(exc: Exception) -> None:
    """A release that refuses the mode for this architecture (its own words) is a skip, anything else fails."""
    words = ("not supported", "is not supported", "only supported", "does not support", "not compatible")
    if any(w in str(exc) for w in words):
        pytest.skip(f"this release refuses it: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
    raise exc


def _same_as_greedy(target, row, new_tokens, what, **kwargs):
    try:
        return sw.check_same_as_greedy(target, row, new_tokens, what, **kwargs)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))
    except (ValueError, NotImplementedError) as exc:
        _skip_unsupported(exc)


# -- assisted decoding ------------------------------------------------------------------------------------------
# (model, attention, draft tokens, prompt length, new tokens): both kernels, both draft lengths, all-sliding and
# hybrid models, 3.5x the window; one run to 16x (a long prompt: the cache is past the window from the start).
# Prompt lookup below covers every model.
ASSISTED = [
    ("mistral", "eager", 1, 13 * W, 3 * W),
    ("mistral", "sdpa", 5, 12, 2 * W),
    ("gemma2", "eager", 5, 12, 2 * W),
    ("gemma2", "sdpa", 1, 12, 2 * W),
    ("qwen3", "eager", 1, 12, 2 * W),
    ("gemma3", "sdpa", 5, 12, 2 * W),
    ("gemma4-shared-kv", "eager", 5, 12, 2 * W),
    ("gpt-oss", "eager", 1, 12, 2 * W),
]


@pytest.mark.parametrize("name,attn,draft,prompt,new", ASSISTED,
                         ids=[f"{n}-{a}-draft{d}-{(p + t) / W:g}x" for n, a, d, p, t in ASSISTED])
def test_assisted_decoding_matches_greedy(request, name, attn, draft, prompt, new):
    from packaging.version import Version

    from hf_genfix.oracles import DefectObserved

    import hf_genfix

    fixed = any(s.id == "sliding-window-gemma2-decode-mask" and s.state == "applied" for s in hf_genfix.status())
    if name == "gemma2" and release() < Version("4.53.0") and not fixed:  # 4.46-4.47: that patch corrects it
        request.applymarker(pytest.mark.xfail(
            raises=DefectObserved, strict=True,
            reason="4.46: Gemma-2 is only correct past the window with its HybridCache; assisted decoding gives it a "
                   "DynamicCache and its tokens part from greedy (measured on 4.46.3, gone by 4.53.3; "
                   "sliding-window-gemma2-decode-mask corrects it where it is applied)"))
    target, drafter = model(name, attn), model(name, attn, seed=1)
    figures = _same_as_greedy(target, sw.prompts(prompt)[0], new, f"{name} ({attn}) assisted, {draft}-token drafts",
                              **sw.drafting(drafter, draft))
    assert figures["tokens"] == prompt + new >= 3 * W
    assert figures["max_logit_diff"] <= 1e-4


# -- prompt lookup ----------------------------------------------------------------------------------------------
LOOKUP = [(n, "eager") for n in sw.MODELS] + [("mistral", "sdpa"), ("gemma2", "sdpa")]


@pytest.mark.parametrize("name,attn", LOOKUP, ids=[f"{n}-{a}" for n, a in LOOKUP])
def test_prompt_lookup_matches_greedy(name, attn):
    from packaging.version import Version

    from hf_genfix.oracles import DefectObserved

    (head,) = sw.prompts(6, seed=3)
    row = head * 3  # repeated n-grams, so that the lookup has drafts to propose (and to have rejected)
    try:
        figures = _same_as_greedy(model(name, attn), row, 3 * W, f"{name} ({attn}) prompt lookup",
                                  prompt_lookup_num_tokens=3)
    except DefectObserved as exc:
        if release() < Version("4.53.0") and "new tokens for max_new_tokens" in exc.message:
            pytest.xfail("4.46: prompt lookup can return one token more than max_new_tokens (all greedy's) on "
                         "every architecture, llama too: a length defect of old releases, not a sliding-window one")
        raise
    assert figures["tokens"] == len(row) + 3 * W
    assert figures["max_logit_diff"] <= 1e-4


# -- Gemma-4 MTP drafting ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("draft", [1, 5])
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_gemma4_mtp_drafting_matches_greedy(attn, draft):
    target = model("gemma4-shared-kv", attn)
    try:
        drafter = sw.gemma4_drafter(target)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))
    # 5.18-5.19 build the MTP candidate generator with missing arguments: patch drafting-mtp-init.
    figures = _same_as_greedy(target, sw.prompts(12)[0], 2 * W, f"gemma4 ({attn}) MTP, {draft}-token drafts",
                              **sw.drafting(drafter, draft))
    assert figures["tokens"] == 12 + 2 * W
    assert figures["max_logit_diff"] <= 1e-4


# -- chunked prefill --------------------------------------------------------------------------------------------
CHUNKED = [(n, "eager") for n in sw.MODELS] + [("mistral", "sdpa"), ("gemma2", "sdpa"), ("gemma3", "sdpa")]


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("name,attn", CHUNKED, ids=[f"{n}-{a}" for n, a in CHUNKED])
def test_chunked_prefill_matches_no_cache_forward(name, attn, batch):
    from packaging.version import Version

    from transformers import GenerationConfig

    if not hasattr(GenerationConfig(), "prefill_chunk_size"):
        pytest.skip("generate() has no prefill_chunk_size on this release")
    if batch > 1 and release() < Version("5.0.0"):
        pytest.skip("the 4.x chunk loop sets position_ids = cache_position, ignoring left padding, on every "
                    "architecture (llama too): a padding defect of 4.53-4.57, not a sliding-window one")
    rows = sw.prompts(3 * W, 2 * W + 5, 3 * W - 3)[:batch]
    try:
        figures = sw.check_past_window(model(name, attn), rows, 2 * W,
                                       f"{name} ({attn}) chunked prefill, chunks of 5", prefill_chunk_size=5)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))
    assert figures["rows"] == batch and figures["tokens"] == 5 * W
    assert figures["max_logit_diff"] <= 1e-4
