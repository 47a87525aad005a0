"""model-paligemma-uncached-prefix: PaliGemma ``generate(use_cache=False)`` keeps its generated tokens causal.

Where the patch is applied (4.46-5.17): greedy uncached generation of an image prompt, every step against a no-cache
forward whose mask is the prefix-LM written out; the same with the patch off fails from step 1 (the generated tokens
read as prefix); cached generation and a left-padded uncached batch whose first step is upstream's are bitwise
upstream's where upstream is right; the per-call prompt width never leaks into a forward.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles.sweep import families as families  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PATCH = "model-paligemma-uncached-prefix"


@pytest.fixture(autouse=True)
def applied_only(require_applied):
    require_applied(PATCH)


@pytest.fixture(scope="module")
def paligemma():
    try:
        return families.ImageTextSubject("paligemma")
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def test_uncached_generation_matches_the_prefix_lm(paligemma):
    assert families.image_uncached(paligemma)["max_logit_diff"] <= 1e-4


def test_without_the_patch_generated_tokens_join_the_prefix(paligemma):
    with hf_genfix.disabled(PATCH), pytest.raises(DefectObserved, match="generated step 1"):
        families.image_uncached(paligemma)


def test_a_padded_uncached_batch_is_each_row_alone(paligemma):
    result = families._image_steps(paligemma, paligemma.prompts(5, 2, seed=5), [paligemma.image(5), paligemma.image(6)],
                                   "image-text, left-padded batch, use_cache=False", use_cache=False)
    assert result["max_logit_diff"] <= 1e-4


def _generate(paligemma, **extra):
    import torch

    kwargs = paligemma.batch(paligemma.prompts(5, 2, seed=5), [paligemma.image(5), paligemma.image(6)])
    common = dict(dict(max_new_tokens=3, do_sample=False, return_dict_in_generate=True, output_logits=True), **extra)
    with torch.no_grad():
        ours = paligemma.model.generate(**kwargs, **common)
        with hf_genfix.disabled(PATCH):
            upstream = paligemma.model.generate(**kwargs, **common)
    return ours, upstream


@pytest.mark.parametrize("extra", [dict(), dict(use_cache=False, max_new_tokens=1)], ids=["cached", "one-token"])
def test_where_upstream_is_right_it_is_bitwise_upstream(paligemma, extra):
    import torch

    ours, upstream = _generate(paligemma, **extra)
    assert torch.equal(ours.sequences, upstream.sequences)
    assert all(torch.equal(a, b) for a, b in zip(ours.logits, upstream.logits))


class TestPatch(PatchTests):
    """``model-paligemma-uncached-prefix``: its probe proves it on this release; its plain program gets it installed."""
