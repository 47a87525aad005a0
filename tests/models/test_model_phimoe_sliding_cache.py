"""model-phimoe-sliding-cache: PhiMoE generation past its sliding window equals the no-cache forward.

On 4.56-4.57 (the patch applies there) upstream's cache keeps the last keys while PhiMoE's own mask is cut from the
first ones: silently wrong from the first step past the window. Elsewhere the same tests check upstream.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix._registry import in_range  # noqa: E402
from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad  # noqa: E402
from hf_genfix.oracles.sliding import prompts  # noqa: E402

PATCH = "model-phimoe-sliding-cache"
WINDOW = 8


@pytest.fixture(scope="module")
def phimoe(tiny):
    return tiny("phimoe", sliding_window=WINDOW)


def test_the_patch_is_installed_where_the_release_has_the_defect():
    status = next(s for s in hf_genfix.status() if s.id == PATCH)
    expected = "applied" if in_range(">=4.56.0,<5.0.0", transformers.__version__) else "not-needed"
    assert status.state == expected, (status.state, status.reason)


@pytest.mark.parametrize("lengths", [(7, 7), (12, 5)])
def test_generation_past_the_window_matches_the_no_cache_forward(phimoe, lengths):
    rows = prompts(*lengths, seed=len(lengths[1:]) + lengths[0])
    ids, mask = left_pad(rows)
    run = generate_steps(phimoe, ids, mask, max_new_tokens=2 * WINDOW, pad_token_id=0, eos_token_id=None)
    figures = check_rows_against_reference(phimoe, rows, run, "phimoe past the window", eos_token_id=[])
    assert figures["steps_compared"] == 2 * 2 * WINDOW


def test_a_hand_written_loop_without_a_cache_gets_one_that_keeps_the_window(phimoe):
    import torch

    from hf_genfix.helpers.decode import renames_keyword
    from hf_genfix.oracles import reference_logits

    (row,) = prompts(3 * WINDOW, seed=3)
    ids = torch.tensor([row])
    keyword = "cache" if renames_keyword(type(phimoe).forward, "past_key_values") else "past_key_values"  # 5.24
    with torch.no_grad():
        out = phimoe(ids[:, :WINDOW + 2], use_cache=True)
        step = phimoe(ids[:, WINDOW + 2:WINDOW + 3], use_cache=True, **{keyword: out.past_key_values}).logits
    assert torch.allclose(step[0, -1], reference_logits(phimoe, row[:WINDOW + 3])[-1], atol=1e-4)


def test_within_the_window_it_is_upstream_bitwise(phimoe, upstream_bitwise):
    ids, mask = left_pad(prompts(4, 3, seed=2))
    upstream_bitwise(phimoe, PATCH, ids, attention_mask=mask, max_new_tokens=3)
