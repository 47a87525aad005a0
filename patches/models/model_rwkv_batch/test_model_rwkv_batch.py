"""model-rwkv-batch: batched RWKV generation equals each row generated alone, on the installed release.

With hf_genfix active (the patch applies on every release from 4.40.2): batches of 2 and 3 unpadded rows, greedy
generation, every row and step against a no-cache forward of that row alone; a one-token step returns one
position per row, equal to the same step run row by row; a batch of one is bitwise what upstream gives. Without
the patch the one-token step returns (batch, batch, vocab) logits and rows mix from the second token (the probe,
in its PatchTests.test_probe_proves_the_patch, shows it on the installed release).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad  # noqa: E402
from hf_genfix.oracles.sliding import prompts  # noqa: E402
from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise  # noqa: E402

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PATCH = "model-rwkv-batch"


@pytest.fixture(scope="module")
def rwkv(tiny):
    return tiny("rwkv", rescale_every=0)


def test_the_patch_applies_here():
    assert next(s for s in hf_genfix.status() if s.id == PATCH).state == "applied"


@pytest.mark.parametrize("batch,length", [(2, 7), (3, 5), (2, 1)])
def test_batched_greedy_matches_each_row_alone(rwkv, batch, length):
    rows = prompts(*([length] * batch), seed=batch)
    ids, _ = left_pad(rows)  # same lengths: no padding (RWKV ignores the attention mask)
    run = generate_steps(rwkv, ids, None, max_new_tokens=6, pad_token_id=0, eos_token_id=None)
    figures = check_rows_against_reference(rwkv, rows, run, f"rwkv, batch of {batch}", eos_token_id=[])
    assert figures["steps_compared"] == batch * 6 and figures["max_logit_diff"] <= 1e-4


def test_one_token_step_equals_the_rows_alone(rwkv):
    import torch

    ids, _ = left_pad(prompts(6, 6, seed=7))
    with torch.no_grad():
        batch = rwkv(ids[:, -1:], state=rwkv(ids[:, :-1], use_cache=True).state, use_cache=True).logits
        alone = [rwkv(row[None, -1:], state=rwkv(row[None, :-1], use_cache=True).state, use_cache=True).logits
                 for row in ids]
    assert batch.shape == (2, 1, rwkv.config.vocab_size)
    assert torch.allclose(batch, torch.cat(alone), atol=1e-5)


def test_a_batch_of_one_is_upstream_bitwise(rwkv):
    import torch

    assert_upstream_bitwise(rwkv, PATCH, torch.tensor(prompts(7, seed=9)))


class TestPatch(PatchTests):
    """``model-rwkv-batch``: its probe proves it on this release; its plain program gets it installed."""
