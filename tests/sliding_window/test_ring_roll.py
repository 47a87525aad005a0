"""sliding-window-ring-roll: a sliding ring cache keeps position 0 while it writes position window-1 (4.46-4.51).

HybridCache and SlidingWindowCache roll their ring one write early and drop the first token. With the patch:
prompts shorter than the window, decoded past it on the default hybrid cache (Gemma-2) and on
cache_implementation="sliding_window" (Mistral), match the no-cache reference at every step; a prefill of exactly
the window is upstream's bitwise. Without it (``hf_genfix.disabled``) the step that writes position window-1 is
off. Outside the range the tests are skipped.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import (DefectObserved, ProbeSkipped, check_rows_against_reference,  # noqa: E402
                               generate_steps, left_pad, tiny_model)
from hf_genfix.oracles.sliding import MODELS, WINDOW, prompts  # noqa: E402

PATCH = "sliding-window-ring-roll"
CASES = {"gemma2": None, "mistral": "sliding_window"}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request, require_applied):
    require_applied(PATCH)
    model_type, extra = MODELS[request.param]
    try:
        model = tiny_model(model_type, sliding_window=WINDOW, **extra)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))
    cache = CASES[request.param]
    return model, ({"cache_implementation": cache} if cache else {})


@pytest.mark.parametrize("length", [1, 4, WINDOW - 1])
def test_decoding_through_the_last_slot_keeps_the_first_token(case, length):
    model, cache = case
    rows = prompts(length, seed=length)
    ids, mask = left_pad(rows)
    kwargs = dict(max_new_tokens=WINDOW + 2, pad_token_id=0, eos_token_id=None, **cache)
    run = generate_steps(model, ids, mask, **kwargs)
    figures = check_rows_against_reference(model, rows, run, f"{model.config.model_type} {length}", eos_token_id=[])
    assert figures["steps_compared"] == WINDOW + 2
    with hf_genfix.disabled(PATCH):
        upstream = generate_steps(model, ids, mask, **kwargs)
    with pytest.raises(DefectObserved):  # the test can fail: upstream drops position 0 at position window-1
        check_rows_against_reference(model, rows, upstream, "patch off", eos_token_id=[])


def test_a_prefill_of_exactly_the_window_is_upstream_s_bitwise(case):
    import torch

    model, cache = case
    ids, mask = left_pad(prompts(WINDOW, seed=11))
    kwargs = dict(max_new_tokens=3, pad_token_id=0, eos_token_id=None, **cache)
    run = generate_steps(model, ids, mask, **kwargs)
    with hf_genfix.disabled(PATCH):
        upstream = generate_steps(model, ids, mask, **kwargs)
    assert torch.equal(run.sequences, upstream.sequences)
    assert all(torch.equal(a, b) for a, b in zip(run.step_logits, upstream.step_logits))
