"""sliding-window-hybrid-sliding-mask: a static-cache generate() on a model with "hybrid_sliding" layers (Inkling)
keeps its sliding layers to their window (5.14-5.24).

create_masks_for_generate builds the "sliding_attention" mask of a "hybrid_sliding" layer with create_causal_mask, so
with a static cache the sliding layers attend past their window from the prefill on. With the patch: static-cache
generation of unpadded and left-padded rows matches the reference at every step (all layers sliding), only the
sliding mask of create_masks_for_generate's dict changes, and the dynamic cache, which the model masks itself, is
upstream's bitwise. Without it (``hf_genfix.disabled``) the first generated token is already off. Outside the range
the patch is not installed and the tests are skipped.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles.sliding import WINDOW, check_past_window, prompts  # noqa: E402
from hf_genfix.oracles.sweep.core import build  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PATCH = "sliding-window-hybrid-sliding-mask"


@pytest.fixture(scope="module")
def inkling(require_applied):
    require_applied(PATCH)
    try:
        return build("inkling_text", sliding_window=WINDOW)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("lengths", [(10,), (13, 6)])
def test_static_cache_generation_matches_the_reference(inkling, lengths):
    rows = prompts(*lengths, seed=len(lengths))
    figures = check_past_window(inkling, rows, 6, f"inkling static {lengths}", cache_implementation="static")
    assert figures["steps_compared"] == 6 * len(rows)
    with hf_genfix.disabled(PATCH), pytest.raises(DefectObserved, match="generated step 0"):
        check_past_window(inkling, rows, 6, "inkling static, patch off", cache_implementation="static")


def test_only_the_sliding_mask_changes(inkling):
    import torch
    from transformers import StaticCache, masking_utils
    from transformers.generation import utils

    cache = StaticCache(config=inkling.config, max_cache_len=16)
    embeds = torch.empty((1, 10, 0))
    mask = torch.ones(1, 10, dtype=torch.long)
    kwargs = dict(config=inkling.config, inputs_embeds=embeds, attention_mask=mask,
                  position_ids=torch.arange(10)[None])
    ours = utils.create_masks_for_generate(**kwargs, **{_cache_name(): cache})
    with hf_genfix.disabled(PATCH):
        upstream = utils.create_masks_for_generate(**kwargs, **{_cache_name(): cache})
    window = masking_utils.create_sliding_window_causal_mask(**kwargs, **{_cache_name(): cache})
    assert set(ours) == set(upstream)
    assert torch.equal(ours["sliding_attention"], window)
    assert not torch.equal(upstream["sliding_attention"], window)  # the test can fail: upstream's is causal
    assert all(ours[k] is upstream[k] or torch.equal(ours[k], upstream[k]) for k in ours if k != "sliding_attention")


def _cache_name() -> str:
    import inspect

    from transformers import masking_utils

    params = inspect.signature(masking_utils.create_masks_for_generate).parameters
    return "cache" if "cache" in params else "past_key_values"


def test_a_dynamic_cache_is_upstream_s_bitwise(inkling):
    import torch

    from hf_genfix.oracles import generate_steps, left_pad

    ids, mask = left_pad(prompts(12, 5, seed=4))
    run = generate_steps(inkling, ids, mask, max_new_tokens=4, pad_token_id=0, eos_token_id=None)
    with hf_genfix.disabled(PATCH):
        upstream = generate_steps(inkling, ids, mask, max_new_tokens=4, pad_token_id=0, eos_token_id=None)
    assert torch.equal(run.sequences, upstream.sequences)
    assert all(torch.equal(a, b) for a, b in zip(run.step_logits, upstream.step_logits))


class TestPatch(PatchTests):
    """``sliding-window-hybrid-sliding-mask``: its probe proves it on this release; its plain program gets it
    installed."""
