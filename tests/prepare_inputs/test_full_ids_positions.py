"""prepare-inputs-full-ids-positions: a model fed the whole ids every step gets a position for each, on the
installed release.

With hf_genfix active: a tiny OpenAI-GPT (its own prepare_inputs_for_generation feeds the whole ids, no KV cache),
greedy generate() with the cache flag on, one row and an unpadded batch of 2, every step against a no-cache forward
of each row; a model with a KV cache (llama) is bitwise upstream's. Where the patch applies (5.2.0), with it
switched off OpenAI-GPT is wrong from the second token.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import (DefectObserved, ProbeSkipped, check_rows_against_reference,  # noqa: E402
                               generate_steps, left_pad, tiny_model)
from hf_genfix.oracles.sweep import build  # noqa: E402

PATCH = "prepare-inputs-full-ids-positions"
ROWS = [[47, 117, 61, 13, 91, 7, 55, 6, 125], [5, 9, 77, 23, 64, 30, 12, 8, 101]]


@pytest.fixture(autouse=True)
def patches_decided():
    from hf_genfix.doctor import import_targets

    import_targets()


@pytest.fixture(scope="module")
def gpt():
    try:
        return build("openai-gpt", seed=0)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def _applied() -> bool:
    return next(s for s in hf_genfix.status() if s.id == PATCH).state in ("applied", "forced")


@pytest.mark.parametrize("rows", [ROWS[:1], ROWS])
def test_openai_gpt_generation_matches_the_no_cache_forward(gpt, rows):
    run = generate_steps(gpt, *left_pad(rows), max_new_tokens=6, use_cache=True)
    assert check_rows_against_reference(gpt, rows, run, "openai-gpt")["steps_compared"] == 6 * len(rows)


def test_without_the_patch_openai_gpt_is_wrong_from_the_second_token(gpt):
    if not _applied():
        pytest.skip(f"{PATCH} does not apply to this release")
    with hf_genfix.disabled(PATCH):
        run = generate_steps(gpt, *left_pad(ROWS[:1]), max_new_tokens=6, use_cache=True)
    with pytest.raises(DefectObserved):
        check_rows_against_reference(gpt, ROWS[:1], run, "openai-gpt")


def test_a_model_with_a_kv_cache_is_upstreams():
    import torch

    model = tiny_model("llama")
    ids, mask = left_pad([[3, 4, 5, 6, 7], [8, 9, 10]])
    common = dict(attention_mask=mask, max_new_tokens=5, do_sample=False, output_scores=True,
                  return_dict_in_generate=True, pad_token_id=0)
    with torch.no_grad():
        ours = model.generate(ids, **common)
        with hf_genfix.disabled(PATCH):
            upstream = model.generate(ids, **common)
    assert torch.equal(ours.sequences, upstream.sequences)
    assert all(torch.equal(a, b) for a, b in zip(ours.scores, upstream.scores))
