"""model-paligemma-static-cache: a PaliGemma static-cache generation reads its image + prompt prefix bidirectionally.

On releases inside the patch's range (4.46-4.57) with hf_genfix active: a left-padded batch of image prompts, greedy
generation with ``cache_implementation="static"``, every row and step against a no-cache forward of that row alone
with its image and prefix mask; the same with the patch off fails there from step 0; the dynamic cache is bitwise
upstream's.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix._registry import in_range  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles.sweep import families as families  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PATCH = "model-paligemma-static-cache"


@pytest.fixture(autouse=True)
def patches_decided():
    from hf_genfix.doctor import import_targets

    import_targets()


@pytest.fixture(scope="module")
def paligemma():
    try:
        return families.ImageTextSubject("paligemma")
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


@pytest.fixture(autouse=True)
def in_range_only():
    manifest = next(m for m in hf_genfix._activation.registry().manifests() if m.id == PATCH)
    if not in_range(manifest.affected, transformers.__version__):
        pytest.skip(f"{PATCH} is outside its range on {transformers.__version__}")


def test_a_static_cache_is_each_row_alone(paligemma):
    assert families.image_static_cache(paligemma)["max_logit_diff"] <= 1e-4


def test_without_the_patch_the_prefix_is_read_causally_from_step_0(paligemma):
    with hf_genfix.disabled(PATCH), pytest.raises(DefectObserved, match="generated step 0"):
        families.image_static_cache(paligemma)


def test_the_dynamic_cache_is_upstream_bitwise(paligemma):
    import torch

    kwargs = paligemma.batch(paligemma.prompts(5, 2, seed=5), [paligemma.image(5), paligemma.image(6)])
    common = dict(max_new_tokens=3, do_sample=False, return_dict_in_generate=True, output_logits=True)
    with torch.no_grad():
        ours = paligemma.model.generate(**kwargs, **common)
        with hf_genfix.disabled(PATCH):
            upstream = paligemma.model.generate(**kwargs, **common)
    assert torch.equal(ours.sequences, upstream.sequences)
    assert all(torch.equal(a, b) for a, b in zip(ours.logits, upstream.logits))


class TestPatch(PatchTests):
    """``model-paligemma-static-cache``: its probe proves it on this release; its plain program gets it installed."""
