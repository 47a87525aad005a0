"""model-jetmoe-static-cache: JetMoE with a static cache matches a no-cache forward (4.56-4.57).

JetMoeModel.forward calls its layers without cache_position, so a static cache writes every generated token's
keys over slot 0. With the patch: static-cache generation of padded and unpadded rows matches the reference at
every step, a hand call with a caller's StaticCache and no cache_position too, and a dynamic cache's output is
upstream's bitwise. Without it (``hf_genfix.disabled``) the first generated token is already off. Outside the
range the patch is not installed and the tests are skipped.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import (DefectObserved, ProbeSkipped, check_rows_against_reference,  # noqa: E402
                               generate_steps, left_pad, reference_logits, tiny_model)
from hf_genfix.oracles.sliding import prompts  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PATCH = "model-jetmoe-static-cache"


@pytest.fixture(scope="module")
def jetmoe(require_applied):
    require_applied(PATCH)
    try:
        return tiny_model("jetmoe", kv_channels=8)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("lengths", [(10,), (9, 4)])
def test_static_cache_generation_matches_the_reference(jetmoe, lengths):
    rows = prompts(*lengths, seed=len(lengths))
    ids, mask = left_pad(rows)
    kwargs = dict(max_new_tokens=6, pad_token_id=0, eos_token_id=None, cache_implementation="static")
    run = generate_steps(jetmoe, ids, mask, **kwargs)
    figures = check_rows_against_reference(jetmoe, rows, run, f"jetmoe static {lengths}", eos_token_id=[])
    assert figures["steps_compared"] == 6 * len(rows)
    with hf_genfix.disabled(PATCH):
        upstream = generate_steps(jetmoe, ids, mask, **kwargs)
    with pytest.raises(DefectObserved):  # the test can fail: upstream writes the new keys over slot 0
        check_rows_against_reference(jetmoe, rows, upstream, "jetmoe static, patch off", eos_token_id=[])


def test_a_caller_s_static_cache_without_cache_position(jetmoe):
    import torch
    from transformers import StaticCache

    (row,) = prompts(9, seed=3)
    cache = StaticCache(config=jetmoe.config, max_batch_size=1, max_cache_len=16)
    with torch.no_grad():
        jetmoe(torch.tensor([row[:6]]), past_key_values=cache, use_cache=True)
        steps = [jetmoe(torch.tensor([[t]]), past_key_values=cache, use_cache=True).logits[0, -1] for t in row[6:]]
    reference = reference_logits(jetmoe, row)[6:]
    assert float((torch.stack(steps) - reference).abs().max()) <= 1e-4


def test_a_dynamic_cache_is_upstream_s_bitwise(jetmoe):
    import torch

    rows = prompts(8, 5, seed=4)
    ids, mask = left_pad(rows)
    run = generate_steps(jetmoe, ids, mask, max_new_tokens=4, pad_token_id=0, eos_token_id=None)
    with hf_genfix.disabled(PATCH):
        upstream = generate_steps(jetmoe, ids, mask, max_new_tokens=4, pad_token_id=0, eos_token_id=None)
    assert torch.equal(run.sequences, upstream.sequences)
    assert all(torch.equal(a, b) for a, b in zip(run.step_logits, upstream.step_logits))


class TestPatch(PatchTests):
    """``model-jetmoe-static-cache``: its probe proves it on this release; its plain program gets it installed."""
