"""model-falcon-h1-chunk-state: tokens fed after a Falcon-H1 cache continue its Mamba state, on the installed release.

With hf_genfix active: a prefix run with a cache, then a chunk of several tokens with its cache_position; every
position of the chunk against a no-cache forward of the whole row (1 and 2 rows, chunks of 2 to 10 tokens). Where
the patch applies (4.53.0-5.12.1), the same with it switched off shows the defect (the mixer restarts from zeros),
and a prompt without a cache is bitwise upstream's.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix import catalog  # noqa: E402
from hf_genfix.oracles import ProbeSkipped  # noqa: E402
from hf_genfix.oracles.reference import max_diff  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

chunk_after_prefix = catalog.probe_module("model-falcon-h1-chunk-state").chunk_after_prefix
tiny = catalog.probe_module("model-falcon-h1-chunk-state").tiny

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PATCH = "model-falcon-h1-chunk-state"


@pytest.fixture(autouse=True)
def patches_decided():
    from hf_genfix.doctor import import_targets

    import_targets()


@pytest.fixture(scope="module")
def falcon_h1():
    try:
        return tiny()
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def _applied() -> bool:
    return next(s for s in hf_genfix.status() if s.id == PATCH).state in ("applied", "forced")


@pytest.mark.parametrize("prefix,chunk,rows", [(3, 10, 1), (1, 2, 1), (6, 5, 2), (4, 8, 2)])
def test_chunk_after_a_cached_prefix_matches_the_no_cache_forward(falcon_h1, prefix, chunk, rows):
    logits, reference = chunk_after_prefix(falcon_h1, prefix, chunk, rows)
    assert logits.shape == reference.shape and max_diff(logits, reference) <= 1e-4


def test_without_the_patch_the_chunk_forgets_the_prefix(falcon_h1):
    if not _applied():
        pytest.skip(f"{PATCH} does not apply to this release")
    with hf_genfix.disabled(PATCH):
        logits, reference = chunk_after_prefix(falcon_h1, 3, 10)
    assert max_diff(logits, reference) > 1e-2


def test_a_prompt_without_a_cache_is_upstreams(falcon_h1):
    import torch

    ids = torch.tensor([[17, 44, 91, 23, 5, 60, 12, 77]])
    with torch.no_grad():
        ours = falcon_h1(ids, use_cache=False).logits
        with hf_genfix.disabled(PATCH):
            upstream = falcon_h1(ids, use_cache=False).logits
    assert torch.equal(ours, upstream)


class TestPatch(PatchTests):
    """``model-falcon-h1-chunk-state``: its probe proves it on this release; its plain program gets it installed."""
