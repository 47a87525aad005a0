"""``decoding-contrastive-zero-hidden``: the checks every patch owes (hf_genfix.testing.patches.PatchTests) and the
calls it must leave as upstream makes them."""

import pytest

from hf_genfix.testing.patches import PatchTests

PATCH = "decoding-contrastive-zero-hidden"


class TestPatch(PatchTests):
    """``decoding-contrastive-zero-hidden``: its probe proves it on this release; its plain program installs it."""


def _ranking_fast():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from hf_genfix import catalog
    from hf_genfix._registry import in_range, transformers_version

    if not in_range(catalog.manifest(PATCH).affected, transformers_version()):
        pytest.skip(f"{PATCH}: transformers {transformers_version()} is not affected")
    from transformers.generation import utils

    return utils._ranking_fast


def test_a_zero_padding_vector_no_longer_hides_the_penalty():
    """Two candidates; the context's first position is padding with a zero vector. Upstream's scores are NaN and it
    picks the first candidate; with the patch the penalty decides (the second), as with the pad left out."""
    import torch

    import hf_genfix

    ranking_fast = _ranking_fast()
    context = torch.tensor([[[0.0, 0.0], [1.0, 0.0]]]).repeat_interleave(2, 0)  # [B*K=2, S=2, H=2]
    candidates = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]]])  # the first repeats the context, the second does not
    probs = torch.tensor([[0.55, 0.45]])
    mask = torch.tensor([[0, 1], [0, 1]])
    with hf_genfix.disabled(PATCH):
        assert ranking_fast(context, candidates, probs, mask, 0.6, 2).tolist() == [0]  # upstream: greedy
    assert ranking_fast(context, candidates, probs, mask, 0.6, 2).tolist() == [1]
    unpadded = ranking_fast(context[:, 1:], candidates, probs, mask[:, 1:], 0.6, 2)
    assert unpadded.tolist() == [1]  # the definition: the pad left out


def test_what_upstream_gets_right_is_its_own():
    """No zero vector at padding, or a zero vector at a real token: the call is upstream's, nothing recorded."""
    import torch

    import hf_genfix

    ranking_fast = _ranking_fast()
    torch.manual_seed(0)
    context, candidates = torch.randn(6, 5, 8), torch.randn(6, 1, 8)
    probs, mask = torch.rand(2, 3), torch.tensor([[0, 0, 1, 1, 1]]).repeat(6, 1)
    real_zero = context.clone()
    real_zero[:, 3] = 0  # a real token with no direction: NaN upstream, left as it is
    for ctx in (context, real_zero):
        with hf_genfix.recording() as seen:
            ours = ranking_fast(ctx, candidates, probs, mask, 0.6, 3)
        with hf_genfix.disabled(PATCH):
            theirs = ranking_fast(ctx, candidates, probs, mask, 0.6, 3)
        assert torch.equal(ours, theirs)
        assert seen.counts.get(PATCH, (0, 0))[1] == 0
