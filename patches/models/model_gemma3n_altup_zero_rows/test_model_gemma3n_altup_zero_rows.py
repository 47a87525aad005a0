"""``model-gemma3n-altup-zero-rows``: the checks every patch owes (hf_genfix.testing.patches.PatchTests), a
left-padded batch against each row alone (NaN without the patch), and a batch with no zero row bitwise upstream's."""

from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise, sweep_subject

PID = "model-gemma3n-altup-zero-rows"


def _subject():
    return sweep_subject("gemma3n_text")


def test_a_left_padded_batch_is_each_row_alone(require_applied):
    from hf_genfix.oracles.sweep import SCENARIOS

    require_applied(PID)
    assert SCENARIOS["left-padded"](_subject())["max_logit_diff"] < 1e-4


def test_without_the_patch_the_padded_rows_are_nan(require_applied):
    import torch

    import hf_genfix

    require_applied(PID)
    model = _subject().model
    ids = torch.tensor([[0, 0, 0, 17, 44, 91, 23, 5], [3, 9, 27, 81, 4, 16, 64, 25]])
    mask = (ids != 0).long()
    with torch.no_grad():
        with hf_genfix.disabled(PID):
            theirs = model(ids, attention_mask=mask).logits
        ours = model(ids, attention_mask=mask).logits
    assert bool(torch.isnan(theirs[0]).all()) and bool(torch.isfinite(theirs[1]).all())
    assert bool(torch.isfinite(ours).all())
    assert torch.equal(ours[1], theirs[1])  # the row without a pad: upstream's, bitwise


def test_a_batch_without_a_zero_row_is_upstreams(require_applied):
    """No pad in the prompts and none generated (a generated pad token is the defect too: row 1 of seed 3 generates
    one on its 5th step, upstream NaN from there on)."""
    import torch

    require_applied(PID)
    subject = _subject()
    ids = torch.tensor(subject.rows(8, 8, seed=3))
    assert_upstream_bitwise(subject.model, PID, ids, max_new_tokens=4, attention_mask=torch.ones_like(ids))


def test_a_deep_copy_keeps_one_hook(require_applied):
    import copy

    import torch

    require_applied(PID)
    model = copy.deepcopy(_subject().model)
    ids = torch.tensor([[0, 0, 17, 44, 91, 23]])
    with torch.no_grad():
        model(ids, attention_mask=(ids != 0).long())
    projections = [p for m in model.modules() for n in ("altup_projections", "altup_unembed_projections")
                   for p in getattr(m, n, None) or ()]
    assert projections and all(len(p._forward_hooks) == 1 for p in projections)


class TestPatch(PatchTests):
    """``model-gemma3n-altup-zero-rows``: its probe proves it on this release; its plain program installs it."""
