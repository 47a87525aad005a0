"""model-mamba-continuation, model-falcon-mamba-continuation, model-mamba2-continuation (a pure state-space cache) and
model-zamba-chunk-state (a hybrid's): continuations of a cache.

With hf_genfix active: a second turn from generate()'s returned cache, a prefix cache reused through
``copy.deepcopy`` for two continuations, and new tokens fed alone after a cache all match a no-cache forward of the
whole conversation (one row and a left-padded batch). Where the patches apply, the same with them off shows the
defect, and what upstream gets right (a plain cached generate(), a prompt without a cache) is bitwise upstream's.
"""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles.reference import max_diff, reference_logits  # noqa: E402
from hf_genfix.oracles.sweep.continuations import loud_model, prefix_reuse, second_turn  # noqa: E402

from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise  # noqa: E402

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PATCHES = {"mamba": "model-mamba-continuation", "falcon_mamba": "model-falcon-mamba-continuation",
           "mamba2": "model-mamba2-continuation", "zamba": "model-zamba-chunk-state"}
ROW, TURN = [17, 44, 91, 23, 5, 60, 12, 77, 30, 9], [40, 41, 42]


@pytest.fixture(scope="module", params=list(PATCHES))
def subject(request):
    # Where the patch is not applied upstream is wrong or refused (model-mamba-state-chunk before 5.17, whose own
    # tests check the refusal) and nothing of this patch runs: there is nothing of it to test.
    if not _applied(PATCHES[request.param]):
        pytest.skip(f"{PATCHES[request.param]} does not apply to this release")
    try:
        return request.param, loud_model(request.param)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def _applied(patch: str) -> bool:
    from hf_genfix.doctor import import_targets

    import_targets()  # an armed patch installs when its module is imported: what status() says after that
    return next(s for s in hf_genfix.status() if s.id == patch).state in ("applied", "forced")


@pytest.mark.parametrize("rows", [[ROW], [ROW, ROW[:6], ROW[2:]]], ids=["one-row", "left-padded"])
def test_second_turn_from_the_returned_cache_matches_the_no_cache_forward(subject, rows):
    _, model = subject
    assert _or_upstreams_error(second_turn, model, rows, TURN)["max_logit_diff"] <= 1e-4


@pytest.mark.parametrize("rows", [[ROW], [ROW, ROW[:6], ROW[2:]]], ids=["one-row", "left-padded"])
def test_a_prefix_cache_reused_by_deepcopy_matches_the_no_cache_forward(subject, rows):
    _, model = subject
    # Zamba before 5.17 takes no generic DynamicCache as a prefix cache (its own hybrid cache only): loud, and
    # upstream's own error with every patch off too -- nothing silent to correct.
    figures = _or_upstreams_error(prefix_reuse, model, rows, [TURN, [7, 8, 9, 10]])
    assert figures["max_logit_diff"] <= 1e-4


def _or_upstreams_error(check, *args):
    """``check(*args)``; where it raises, the same exception type with every patch off skips the test: a loud
    upstream error, nothing silent to correct (5.25.0's Mamba and Falcon-Mamba: a left-padded batch's second turn
    and reused prefix raise a shape error in the mixer, with or without hf_genfix)."""
    try:
        return check(*args)
    except (AttributeError, TypeError, KeyError, RuntimeError) as exc:
        with hf_genfix.disabled(), pytest.raises(type(exc)):
            check(*args)
        pytest.skip(f"upstream raises this call too: {type(exc).__name__}: {exc}")


def test_new_tokens_alone_after_a_cache_continue_the_state(subject):
    import torch

    model_type, model = subject
    if model_type == "zamba":
        pytest.skip("a hybrid: its attention needs the caller's positions for tokens fed alone")
    with torch.no_grad():
        out = model(torch.tensor([ROW]), use_cache=True)
        keyword, cache = _returned_cache(model, out)
        logits = model(torch.tensor([TURN]), **{keyword: copy.deepcopy(cache)}, use_cache=True).logits[0]
    assert max_diff(logits, reference_logits(model, ROW + TURN)[len(ROW):]) <= 1e-4


CACHE_NAMES = ("cache", "past_key_values", "cache_params")  # the names releases give a state-space model's cache


def _returned_cache(model, out):
    """The cache a forward returned, and the keyword the model's forward takes it back by: the output's own name where
    the forward has that parameter (Mamba's classes say cache_params up to 5.24), else the first the forward has."""
    import inspect

    params = inspect.signature(model.forward).parameters
    name, cache = next((n, getattr(out, n)) for n in CACHE_NAMES if getattr(out, n, None) is not None)
    return (name if name in params else next(n for n in CACHE_NAMES if n in params)), cache


def test_without_the_patch_the_second_turn_is_wrong(subject):
    model_type, model = subject
    if not _applied(PATCHES[model_type]):
        pytest.skip(f"{PATCHES[model_type]} does not apply to this release")
    with hf_genfix.disabled(PATCHES[model_type]), pytest.raises(DefectObserved) as caught:
        second_turn(model, [ROW], TURN)
    assert caught.value.figures["max_logit_diff"] > 1e-2


def test_a_plain_cached_generate_is_upstreams(subject):
    import torch

    model_type, model = subject
    ids = torch.tensor([ROW, [0, 0] + ROW[:8]])
    assert_upstream_bitwise(model, PATCHES[model_type], ids, attention_mask=(ids != 0).long())


class TestPatch(PatchTests):
    """``model-mamba-continuation``: its probe proves it on this release; its plain program gets it installed."""
