"""model-mamba2-batch: on 4.46-4.47 a batch of several rows that continues a cached state on Mamba-2's torch path is
refused loudly.

Where the patch applies: a cached generate() of a batch raises Mamba2BatchUnsupported naming the switch (upstream is
silently wrong there, checked with the patch off); one row, and a batch without a cached state, are bitwise
upstream's.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix import catalog  # noqa: E402
from hf_genfix.oracles import DefectObserved  # noqa: E402
from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps  # noqa: E402
from hf_genfix.oracles.sweep.continuations import loud_model  # noqa: E402

from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise  # noqa: E402

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PATCH = "model-mamba2-batch"
ROWS = [[17, 44, 91, 23, 5, 60], [3, 9, 27, 81, 4, 16]]


class TestPatch(PatchTests):
    """``model-mamba2-batch``: its probe proves it on this release; its plain program gets it installed."""


@pytest.fixture(scope="module")
def mamba2():
    from hf_genfix.doctor import import_targets

    import_targets()
    if next(s for s in hf_genfix.status() if s.id == PATCH).state not in ("applied", "forced"):
        pytest.skip(f"{PATCH} does not apply to this release")
    return loud_model("mamba2", chunk_size=4)


def _batch(model, rows):
    import torch

    ids = torch.tensor(rows)
    run = generate_steps(model, ids, torch.ones_like(ids), max_new_tokens=4, min_new_tokens=4, pad_token_id=0,
                         eos_token_id=None)
    return check_rows_against_reference(model, rows, run, "mamba2 batch", eos_token_id=[])


def test_a_cached_batch_is_refused(mamba2):
    refusal = catalog.fix(PATCH).Mamba2BatchUnsupported
    with pytest.raises(refusal, match="HF_GENFIX_MODEL_MAMBA2_BATCH=off"):
        _batch(mamba2, ROWS)


def test_without_the_patch_it_is_silently_wrong(mamba2):
    with hf_genfix.disabled(PATCH):
        with pytest.raises(DefectObserved):
            _batch(mamba2, ROWS)


@pytest.mark.parametrize("tokens", [4, 6])  # within one chunk (right upstream), past it (wrong upstream, left to it)
def test_one_row_and_a_batch_without_a_cached_state_are_upstreams(mamba2, tokens):
    import torch

    assert _batch(mamba2, ROWS[:1])["max_logit_diff"] < 1e-4
    ids = torch.tensor([row[:tokens] for row in ROWS])  # no cache
    with torch.no_grad():
        ours = mamba2(ids, use_cache=False).logits
        with hf_genfix.disabled(PATCH):
            theirs = mamba2(ids, use_cache=False).logits
    assert torch.equal(ours, theirs)
    assert_upstream_bitwise(mamba2, PATCH, torch.tensor([ROWS[0]]), attention_mask=torch.ones(1, 6, dtype=torch.long))
