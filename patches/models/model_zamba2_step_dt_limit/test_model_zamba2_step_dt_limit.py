"""model-zamba2-step-dt-limit: Zamba2's decoding steps clamp the time step to its floor, as its prompt path does.

With hf_genfix active a plain cached generate() matches a no-cache forward (one row and a left-padded batch); where
the patch applies, the same with it off shows the defect, and a floor no step reaches leaves generate() bitwise
upstream's.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps, left_pad  # noqa: E402
from hf_genfix.oracles.sweep.continuations import loud_model  # noqa: E402

from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise  # noqa: E402

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PATCH = "model-zamba2-step-dt-limit"
ROW = [17, 44, 91, 23, 5, 60, 12, 77, 30, 9]


def _zamba2(**overrides):
    try:
        return loud_model("zamba2", **overrides)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def _cached(model, rows):
    run = generate_steps(model, *left_pad(rows), max_new_tokens=4, pad_token_id=0, eos_token_id=None,
                         min_new_tokens=4)
    return check_rows_against_reference(model, rows, run, "zamba2 cached generate()", eos_token_id=[])


def _skip_unless_applied() -> None:
    # Before 5.16 a cached generate() of Zamba2 is wrong by another defect, on file in patches/open-findings.json
    # (cached/zamba2), that this patch does not touch: there is nothing of it to test.
    from hf_genfix.doctor import import_targets

    import_targets()  # an armed patch installs when its module is imported
    if next(s for s in hf_genfix.status() if s.id == PATCH).state not in ("applied", "forced"):
        pytest.skip(f"{PATCH} does not apply to this release")


@pytest.mark.parametrize("rows", [[ROW], [ROW, ROW[:6], ROW[2:]]], ids=["one-row", "left-padded"])
def test_a_cached_generate_matches_the_no_cache_forward(rows):
    _skip_unless_applied()
    assert _cached(_zamba2(time_step_min=0.05), rows)["max_logit_diff"] <= 1e-4


def test_without_the_patch_the_steps_skip_the_floor():
    _skip_unless_applied()
    with hf_genfix.disabled(PATCH), pytest.raises(DefectObserved) as caught:
        _cached(_zamba2(time_step_min=0.05), [ROW])
    assert caught.value.figures["max_logit_diff"] > 1e-2


def test_a_floor_no_step_reaches_is_upstreams():
    import torch

    ids = torch.tensor([ROW, [0, 0] + ROW[:8]])
    assert_upstream_bitwise(_zamba2(time_step_min=1e-12), PATCH, ids, attention_mask=(ids != 0).long())


class TestPatch(PatchTests):
    """``model-zamba2-step-dt-limit``: its probe proves it on this release; its plain program gets it installed."""
