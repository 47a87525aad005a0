"""model-idefics2/idefics3/smolvlm-uncached-pixels: Idefics2, Idefics3 and SmolVLM keep their image through generate(use_cache=False).

Where the patch is applied (5.0-5.3): a prompt with one image, greedy generate(use_cache=False), every step
against a no-cache forward of prompt + image + generated tokens; with the patch off the same scenario is wrong from
generated step 1 (the re-fed image placeholders are embedded as text); cached generation is bitwise what upstream
gives. Elsewhere the patch is not installed and these tests skip.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles.sweep import families as families  # noqa: E402
from hf_genfix.testing.patches import assert_upstream_bitwise  # noqa: E402



@pytest.fixture(scope="module", params=["idefics2", "idefics3", "smolvlm"])
def subject(request, require_applied):
    require_applied(_patch(request.param))
    try:
        return families.ImageTextSubject(request.param)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def _patch(arch: str) -> str:
    return f"model-{arch}-uncached-pixels"


def test_uncached_generation_matches_the_oracle(subject):
    figures = families.image_uncached(subject)
    assert figures["max_logit_diff"] <= 1e-4


def test_without_the_patch_the_image_is_lost_from_the_second_token(subject):
    with hf_genfix.disabled(_patch(subject.model_type)), pytest.raises(DefectObserved, match="generated step 1"):
        families.image_uncached(subject)


def test_cached_generation_is_upstream_bitwise(subject):
    kwargs = subject.batch(subject.prompts(6, seed=3), [subject.image(2)])
    assert_upstream_bitwise(subject.model, _patch(subject.model_type), kwargs.pop("input_ids"), max_new_tokens=4, **kwargs)
