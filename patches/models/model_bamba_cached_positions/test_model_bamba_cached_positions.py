"""model-bamba-cached-positions: a Bamba forward that continues a cache without positions numbers its tokens
after the cache; a forward that states them, a prefill and generate() are upstream's, bitwise."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.catalog import manifest  # noqa: E402
from hf_genfix._registry import in_range  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PATCH = "model-bamba-cached-positions"


@pytest.fixture(scope="module")
def bamba():
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep.core import Subject

    try:
        return Subject("bamba").model
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def _cache(out):
    return out.past_key_values if hasattr(out, "past_key_values") else out.cache


def test_the_patch_is_installed_where_the_release_has_the_defect():
    status = next(s for s in hf_genfix.status() if s.id == PATCH)
    expected = "applied" if in_range(manifest(PATCH).affected, transformers.__version__) else "not-needed"
    assert status.state == expected, (status.state, status.reason)


@pytest.mark.parametrize("keyword", ["past_key_values", "cache"])
def test_a_decoding_loop_without_positions_matches_the_no_cache_forward(bamba, keyword):
    import inspect

    import torch

    if keyword == "cache" and "cache" not in inspect.signature(type(bamba.model).forward).parameters:
        pytest.skip("this release's forward takes the cache as past_key_values")
    ids = torch.tensor([[5, 9, 2, 7, 11, 3, 8]])
    with torch.no_grad():
        reference = bamba(ids, use_cache=False).logits
        cache = _cache(bamba(ids[:, :3], use_cache=True))
        if cache is None:
            pytest.skip("this release's Bamba returns no cache from a plain forward (4.48-5.4)")
        for t in range(3, ids.shape[1]):
            out = bamba(ids[:, t:t + 1], **{keyword: cache}, use_cache=True)
            torch.testing.assert_close(out.logits[:, -1], reference[:, t], atol=1e-4, rtol=0)


def test_stated_positions_a_prefill_and_generate_are_upstream_bitwise(bamba):
    import torch

    ids = torch.tensor([[5, 9, 2, 7, 11, 3, 8]])
    with torch.no_grad():
        cache = _cache(bamba(ids[:, :3], use_cache=True))
        if cache is None:
            pytest.skip("this release's Bamba returns no cache from a plain forward (4.48-5.4)")
        stated = bamba(ids[:, 3:], past_key_values=cache, position_ids=torch.arange(3, 7)[None]).logits
        prefill = bamba(ids, use_cache=True).logits
        generated = bamba.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=4, do_sample=False)
        with hf_genfix.disabled(PATCH):
            cache = _cache(bamba(ids[:, :3], use_cache=True))
            assert torch.equal(stated, bamba(ids[:, 3:], past_key_values=cache,
                                             position_ids=torch.arange(3, 7)[None]).logits)
            assert torch.equal(prefill, bamba(ids, use_cache=True).logits)
            assert torch.equal(generated, bamba.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=4,
                                                         do_sample=False))


class TestPatch(PatchTests):
    """``model-bamba-cached-positions``: its probe proves it on this release; its plain program gets it installed."""
