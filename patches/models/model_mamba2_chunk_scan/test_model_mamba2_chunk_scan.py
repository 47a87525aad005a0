"""``model-mamba2-chunk-scan``: the checks every patch owes (hf_genfix.testing.patches.PatchTests), and the batch
without a cache (each row is scanned alone; a batch it cannot correct stays upstream's)."""

from __future__ import annotations

import pytest

from hf_genfix.testing.patches import PatchTests

PATCH = "model-mamba2-chunk-scan"
ROWS = [[17, 44, 91, 23, 5, 60, 8, 71, 33, 2, 96, 40, 12, 57],
        [3, 9, 27, 81, 4, 16, 64, 25, 100, 49, 36, 1, 77, 11]]


class TestPatch(PatchTests):
    """``model-mamba2-chunk-scan``: its probe proves it on this release; its plain program gets it installed."""


@pytest.fixture(scope="module")
def mamba2():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import hf_genfix
    from hf_genfix.doctor import import_targets
    from hf_genfix.oracles.sweep.continuations import loud_model

    import_targets()
    if next(s for s in hf_genfix.status() if s.id == PATCH).state not in ("applied", "forced"):
        pytest.skip(f"{PATCH} does not apply to this release")
    return loud_model("mamba2", chunk_size=4)


def _logits(model, ids, **kwargs):
    import torch

    with torch.no_grad():
        return model(ids, use_cache=False, **kwargs).logits


def _one_chunk(model, ids):
    """The oracle: each row alone, scanned as one chunk (upstream is right within one chunk)."""
    import torch

    mixers = [m for m in model.modules() if hasattr(m, "chunk_size") and hasattr(m, "torch_forward")]
    saved = [m.chunk_size for m in mixers]
    try:
        for m in mixers:
            m.chunk_size = ids.shape[1]
        return torch.cat([_logits(model, ids[r:r + 1]) for r in range(ids.shape[0])])
    finally:
        for m, size in zip(mixers, saved):
            m.chunk_size = size


@pytest.mark.usefixtures("patches_decided")
def test_a_batch_without_a_cache_is_each_row_alone(mamba2):
    import torch

    import hf_genfix

    ids = torch.tensor(ROWS)  # 14 tokens: three chunks of 4 past the first
    batch = _logits(mamba2, ids)
    rows = _one_chunk(mamba2, ids)
    assert float((batch - rows).abs().max()) < 1e-4
    with hf_genfix.disabled(PATCH):
        wrong = _logits(mamba2, ids)
    assert float((wrong - rows).abs().max()) > 1e-2  # upstream's batch is silently wrong past the first chunk


@pytest.mark.usefixtures("patches_decided")
def test_a_pad_past_the_first_chunk_leaves_the_batch_upstreams(mamba2):
    import torch

    import hf_genfix

    ids = torch.tensor(ROWS)
    mask = torch.ones_like(ids)
    mask[1, :6] = 0  # a left pad past the first chunk: one row alone would be upstream's too
    ours = _logits(mamba2, ids, attention_mask=mask)
    with hf_genfix.disabled(PATCH):
        theirs = _logits(mamba2, ids, attention_mask=mask)
    assert torch.equal(ours, theirs)
