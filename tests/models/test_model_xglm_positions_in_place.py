"""model-xglm-positions-in-place: XGLM generating without a cache keeps its positions, on the installed release.

With hf_genfix active: greedy generate(use_cache=False) on a tiny XGLM, every step against a no-cache forward of
the row; beam search with and without a cache pick the same tokens; the embedding leaves the caller's position_ids
as they were. Where the patch applies (5.2.0), with it switched off the uncached run drifts from the second token.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import (DefectObserved, ProbeSkipped, check_rows_against_reference,  # noqa: E402
                               generate_steps, left_pad)
from hf_genfix.oracles.sweep import build  # noqa: E402

PATCH = "model-xglm-positions-in-place"
ROWS = [[47, 117, 61, 13, 91, 7, 55, 6, 125], [5, 9, 77, 23, 64, 30, 12, 8, 101]]


@pytest.fixture(autouse=True)
def patches_decided():
    from hf_genfix.doctor import import_targets

    import_targets()


@pytest.fixture(scope="module")
def xglm():
    try:
        return build("xglm", seed=0)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def _applied() -> bool:
    return next(s for s in hf_genfix.status() if s.id == PATCH).state in ("applied", "forced")


@pytest.mark.parametrize("use_cache", [False, True])
def test_greedy_matches_the_no_cache_forward(xglm, use_cache):
    run = generate_steps(xglm, *left_pad(ROWS[:1]), max_new_tokens=6, use_cache=use_cache)
    assert check_rows_against_reference(xglm, ROWS[:1], run, "xglm")["steps_compared"] == 6


def test_the_callers_positions_are_left_as_they_were(xglm):
    import torch

    positions = torch.arange(9)[None]
    with torch.no_grad():
        xglm(torch.tensor(ROWS[:1]), position_ids=positions, use_cache=False)
    assert torch.equal(positions, torch.arange(9)[None])


def test_without_the_patch_uncached_generation_drifts(xglm):
    if not _applied():
        pytest.skip(f"{PATCH} does not apply to this release")
    with hf_genfix.disabled(PATCH):
        run = generate_steps(xglm, *left_pad(ROWS[:1]), max_new_tokens=6, use_cache=False)
    with pytest.raises(DefectObserved):
        check_rows_against_reference(xglm, ROWS[:1], run, "xglm")
