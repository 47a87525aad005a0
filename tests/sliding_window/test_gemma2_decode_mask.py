"""sliding-window-gemma2-decode-mask: Gemma-2's cached steps past the window match a no-cache forward (4.46-4.47).

Gemma-2's sliding layers band the mask by the query's row, not its position, and take the hybrid cache's first
mask columns for its last keys. With the patch: left-padded runs past the window on the default (hybrid) cache,
runs on a dynamic cache and assisted decoding match the reference; a prefill (no cache) is upstream's bitwise.
Without it (``hf_genfix.disabled``) the first step past the window is off. Outside the range the tests are skipped.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import (DefectObserved, ProbeSkipped, check_rows_against_reference,  # noqa: E402
                               generate_steps, left_pad, reference_logits, tiny_model)
from hf_genfix.oracles.sliding import MODELS, WINDOW, check_same_as_greedy, drafting, prompts  # noqa: E402

PATCH = "sliding-window-gemma2-decode-mask"


@pytest.fixture(scope="module")
def gemma2(require_applied):
    require_applied(PATCH)
    model_type, extra = MODELS["gemma2"]
    try:
        return tiny_model(model_type, sliding_window=WINDOW, **extra)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def _dynamic():
    from transformers import DynamicCache

    return dict(past_key_values=DynamicCache(), cache_implementation=None)


@pytest.mark.parametrize("lengths,cache", [((12, 5), "hybrid"), ((16,), "hybrid"), ((5,), "dynamic"),
                                           ((11, 3), "dynamic")])
def test_past_the_window_matches_the_reference(gemma2, lengths, cache):
    rows = prompts(*lengths, seed=len(lengths))
    ids, mask = left_pad(rows)
    kwargs = dict(max_new_tokens=2 * WINDOW, pad_token_id=0, eos_token_id=None)
    run = generate_steps(gemma2, ids, mask, **kwargs, **(_dynamic() if cache == "dynamic" else {}))
    figures = check_rows_against_reference(gemma2, rows, run, f"gemma2 {cache} {lengths}", eos_token_id=[])
    assert figures["steps_compared"] == 2 * WINDOW * len(rows)
    with hf_genfix.disabled(PATCH):
        upstream = generate_steps(gemma2, ids, mask, **kwargs, **(_dynamic() if cache == "dynamic" else {}))
    if cache == "dynamic" or len(rows) > 1:
        with pytest.raises(DefectObserved):  # the test can fail: upstream masks other positions
            check_rows_against_reference(gemma2, rows, upstream, "gemma2, patch off", eos_token_id=[])


def test_assisted_decoding_gives_plain_greedy(gemma2):
    (row,) = prompts(2 * WINDOW, seed=6)
    draft = tiny_model(MODELS["gemma2"][0], seed=1, sliding_window=WINDOW, **MODELS["gemma2"][1])
    check_same_as_greedy(gemma2, row, 2 * WINDOW, "gemma2 assisted", **drafting(draft, 5))


def test_a_prefill_is_upstream_s_bitwise(gemma2):
    import torch

    ids, mask = left_pad(prompts(12, 5, seed=7))
    with torch.no_grad():
        patched = gemma2(ids, attention_mask=mask).logits
        with hf_genfix.disabled(PATCH):
            upstream = gemma2(ids, attention_mask=mask).logits
    assert torch.equal(patched, upstream)
    assert float((patched[0] - reference_logits(gemma2, ids[0].tolist())).abs().max()) <= 1e-4
