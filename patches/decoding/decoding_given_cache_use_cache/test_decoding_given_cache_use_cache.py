"""``decoding-given-cache-use-cache``: the checks every patch owes (hf_genfix.testing.patches.PatchTests), a reused
prefix cache on MPT (wrong without the patch), and the calls it leaves to upstream."""

import pytest

from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise, sweep_subject

PID = "decoding-given-cache-use-cache"


def test_a_reused_prefix_cache_is_continued(require_applied):
    import hf_genfix
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.sweep import SCENARIOS

    require_applied(PID)
    subject = sweep_subject("mpt")
    assert SCENARIOS["prefix-reuse"](subject)["max_logit_diff"] < 1e-4
    with hf_genfix.disabled(PID), pytest.raises((DefectObserved, RuntimeError)):  # 4.54-5.1 raise
        SCENARIOS["prefix-reuse"](subject)


def test_without_a_cache_or_with_the_callers_own_flag_it_is_upstreams(require_applied):
    import contextlib
    import copy

    import torch

    import hf_genfix

    require_applied(PID)
    model = sweep_subject("mpt").model
    ids = torch.tensor([[17, 44, 91, 23, 5, 60, 8, 71, 33, 2]])
    assert_upstream_bitwise(model, PID, ids, max_new_tokens=3, attention_mask=torch.ones_like(ids))
    with torch.no_grad():
        prefix = model(ids[:, :6], use_cache=True).past_key_values
    runs = []
    for off in (False, True):  # the caller's own use_cache=True: the same call with the patch on and off
        with hf_genfix.disabled(PID) if off else contextlib.nullcontext(), torch.no_grad():
            runs.append(model.generate(ids, attention_mask=torch.ones_like(ids), past_key_values=copy.deepcopy(prefix),
                                       use_cache=True, max_new_tokens=3, do_sample=False))
    assert torch.equal(runs[0], runs[1])


class TestPatch(PatchTests):
    """``decoding-given-cache-use-cache``: its probe proves it on this release; its plain program installs it."""
