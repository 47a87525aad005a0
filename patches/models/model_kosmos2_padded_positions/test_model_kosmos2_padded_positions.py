"""model-kosmos2-padded-positions: a left-padded Kosmos-2 batch of image prompts equals each row generated alone.

On releases inside the patch's range (4.54.0 on) with hf_genfix active: two prompts of different lengths with
different images (and with the same image), left-padded, greedy generation, every row and step against a no-cache
forward of that row alone with its image; the same scenarios with the patch off fail there (the prepared step
counts the pads as positions); an unpadded batch and the prompt step are bitwise what upstream gives. Outside the
range (up to 4.53.3) the patch is not installed and the scenarios pass as they are.
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

PATCH = "model-kosmos2-padded-positions"


@pytest.fixture(autouse=True)
def patches_decided():
    from hf_genfix.doctor import import_targets

    import_targets()


@pytest.fixture(scope="module")
def kosmos():
    try:
        return families.ImageTextSubject("kosmos-2")
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def _affected() -> bool:
    manifest = next(m for m in hf_genfix._activation.registry().manifests() if m.id == PATCH)
    return in_range(manifest.affected, transformers.__version__)


@pytest.mark.parametrize("scenario", [families.image_padded, families.image_padded_same_image])
def test_a_padded_batch_is_each_row_alone(kosmos, scenario):
    figures = scenario(kosmos)
    assert figures["steps_compared"] == 10 and figures["max_logit_diff"] <= 1e-4


@pytest.mark.parametrize("scenario", [families.image_padded, families.image_padded_same_image])
def test_without_the_patch_a_padded_row_is_wrong_from_the_second_token(kosmos, scenario):
    if not _affected():
        pytest.skip(f"{PATCH} is outside its range on {transformers.__version__}")
    with hf_genfix.disabled(PATCH), pytest.raises(DefectObserved, match="generated step 1"):
        scenario(kosmos)


def test_an_unpadded_batch_is_upstream_bitwise(kosmos):
    import torch

    prompts = kosmos.prompts(5, 5, seed=11)
    kwargs = kosmos.batch(prompts, [kosmos.image(1), kosmos.image(2)])
    common = dict(max_new_tokens=4, do_sample=False, return_dict_in_generate=True, output_logits=True)
    with torch.no_grad():
        ours = kosmos.model.generate(**kwargs, **common)
        with hf_genfix.disabled(PATCH):
            upstream = kosmos.model.generate(**kwargs, **common)
    assert torch.equal(ours.sequences, upstream.sequences)
    assert all(torch.equal(a, b) for a, b in zip(ours.logits, upstream.logits))


class TestPatch(PatchTests):
    """``model-kosmos2-padded-positions``: its probe proves it on this release; its plain program gets it installed."""
