"""``model-llama4-moe-router-scores``: the checks every patch owes (hf_genfix.testing.patches.PatchTests), a prompt's
first logits independent of the tokens after it (not without the patch), cached generate() against the no-cache
forward, and one token (a decoding step) bitwise upstream's."""

from hf_genfix.testing.patches import PatchTests, sweep_subject

PID = "model-llama4-moe-router-scores"


def test_a_prompts_first_logits_do_not_see_later_tokens(require_applied):
    from hf_genfix.oracles.sweep import SCENARIOS

    require_applied(PID)
    assert SCENARIOS["causal-prefix"](sweep_subject("llama4_text"))["max_logit_diff"] < 1e-4


def test_without_the_patch_the_experts_mix_tokens(require_applied):
    import pytest

    import hf_genfix
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.sweep import SCENARIOS

    require_applied(PID)
    subject = sweep_subject("llama4_text")
    with hf_genfix.disabled(PID), pytest.raises(DefectObserved, match="not causal"):
        SCENARIOS["causal-prefix"](subject)


def test_a_cached_generate_is_the_no_cache_forward(require_applied):
    from hf_genfix.oracles.sweep import SCENARIOS

    require_applied(PID)
    assert SCENARIOS["cached"](sweep_subject("llama4_text"))["max_logit_diff"] < 1e-4


def test_one_token_is_upstreams(require_applied):
    """A decoding step's MoE call (one token): upstream's, bitwise."""
    import torch

    import hf_genfix

    require_applied(PID)
    model = sweep_subject("llama4_text").model
    layer = next(m for m in model.modules() if type(m).__name__ == "Llama4TextMoe")
    hidden = torch.randn(1, 1, layer.hidden_dim, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        ours = layer(hidden)
        with hf_genfix.disabled(PID):
            theirs = layer(hidden)
    assert torch.equal(ours[0], theirs[0]) and torch.equal(ours[1], theirs[1])


class TestPatch(PatchTests):
    """``model-llama4-moe-router-scores``: its probe proves it on this release; its plain program installs it."""
