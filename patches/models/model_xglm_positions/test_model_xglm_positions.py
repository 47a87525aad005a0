"""model-xglm-positions: XGLM leaves the caller's position_ids as given, and generate(use_cache=False) is right.

On releases before 5.3 (the patch applies there) upstream's forward shifts the caller's ``position_ids`` by 2 in
place, and on 5.2 ``generate(use_cache=False)`` is silently wrong from the second new token; from 5.3 upstream is
right and the same tests check that it stays so.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix._registry import in_range  # noqa: E402
from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad  # noqa: E402
from hf_genfix.oracles.sliding import prompts  # noqa: E402
from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise  # noqa: E402

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PATCH = "model-xglm-positions"


@pytest.fixture(scope="module")
def xglm(tiny):
    return tiny("xglm")


def test_the_patch_is_installed_where_the_release_has_the_defect():
    status = next(s for s in hf_genfix.status() if s.id == PATCH)
    expected = "applied" if in_range("<5.3.0", transformers.__version__) else "not-needed"
    assert status.state == expected, (status.state, status.reason)


def test_a_forward_leaves_the_callers_position_ids_as_given(xglm):
    import torch

    ids, mask = left_pad(prompts(6, 6, seed=1))
    positions = torch.arange(6).expand(2, 6).clone()
    with torch.no_grad():
        first = xglm(input_ids=ids, attention_mask=mask, position_ids=positions).logits
        again = xglm(input_ids=ids, attention_mask=mask, position_ids=positions).logits
    assert torch.equal(positions, torch.arange(6).expand(2, 6))
    assert torch.equal(first, again)


def test_uncached_generate_matches_the_no_cache_forward(xglm):
    rows = prompts(7, 7, seed=5)
    ids, mask = left_pad(rows)
    run = generate_steps(xglm, ids, mask, max_new_tokens=5, use_cache=False, pad_token_id=0, eos_token_id=None)
    figures = check_rows_against_reference(xglm, rows, run, "xglm, generate(use_cache=False)", eos_token_id=[])
    assert figures["steps_compared"] == 10


def test_cached_generate_is_upstream_bitwise(xglm):
    ids, mask = left_pad(prompts(7, 4, seed=2))
    assert_upstream_bitwise(xglm, PATCH, ids, attention_mask=mask)


class TestPatch(PatchTests):
    """``model-xglm-positions``: its probe proves it on this release; its plain program gets it installed."""
