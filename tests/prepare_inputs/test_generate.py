"""Issue 4, oracles (1) and (2), and the promise that ``generate()`` is left exactly as it was.

(1) a left-padded batch through ``generate()`` equals each row generated from its unpadded prompt (per-step
logits against a no-cache forward, atol 1e-4); (2) the same with ``use_cache=False``. Then the patches must not
change anything ``generate()`` does: with the prepare-inputs patches forced in and switched off, greedy and
seeded-sampling runs must give bit-identical sequences and logits.
"""

from __future__ import annotations

import pytest

from prepare_inputs_models import ARCHITECTURES, model_of, patches_on, quiet_transformers, skip_known_limit

pytest.importorskip("torch")
pytest.importorskip("transformers")

PATCHES = ("prepare-inputs", "prepare-inputs-logits-to-keep", "legacy-cache")


@pytest.mark.parametrize("use_cache", [True, False], ids=["cached", "no-cache"])
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_left_padded_generate_matches_reference(arch, use_cache):
    from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad
    from hf_genfix.oracles.decode import DEFAULT_ROWS

    model = model_of(arch)
    if not use_cache:
        skip_known_limit(arch, "no-cache")
    ids, mask = left_pad(DEFAULT_ROWS)
    with quiet_transformers():
        run = generate_steps(model, ids, mask, max_new_tokens=5, pad_token_id=0, use_cache=use_cache)
    check_rows_against_reference(model, DEFAULT_ROWS, run, f"{arch} generate(use_cache={use_cache})")


def _runs(model, **kwargs):
    import inspect

    import hf_genfix
    import torch

    from hf_genfix.oracles import generate_steps, left_pad
    from hf_genfix.oracles.decode import DEFAULT_ROWS

    ids, mask = left_pad(DEFAULT_ROWS)
    runs = []
    for context in (hf_genfix.disabled(*PATCHES), hf_genfix.forced(*PATCHES)):
        with context, quiet_transformers():
            method = inspect.getattr_static(type(model), "prepare_inputs_for_generation")
            patched = "prepare-inputs" in patches_on(method)
            torch.manual_seed(7)
            try:
                runs.append((patched, generate_steps(model, ids, mask, max_new_tokens=5, pad_token_id=0, **kwargs)))
            except Exception as exc:  # noqa: BLE001 - the same upstream failure with and without is "unchanged"
                runs.append((patched, f"{type(exc).__name__}: {exc}"))
    return runs


def _assert_identical(runs):
    import torch

    (was_patched, before), (is_patched, after) = runs
    assert not was_patched and is_patched, "the comparison must run once without and once with the wrapper"
    if isinstance(before, str) or isinstance(after, str):
        assert before == after
        return
    assert torch.equal(before.sequences, after.sequences)
    assert len(before.step_logits) == len(after.step_logits)
    for a, b in zip(before.step_logits, after.step_logits):
        assert torch.equal(a, b)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_generate_is_bit_identical_with_the_patches(arch):
    _assert_identical(_runs(model_of(arch)))


@pytest.mark.parametrize(
    "kwargs",
    [dict(use_cache=False), dict(do_sample=True, top_k=20), dict(num_beams=2), dict(prefill_chunk_size=3)],
    ids=["no-cache", "sampling", "beam-search", "chunked-prefill"],
)
@pytest.mark.parametrize("arch", ["llama", "gpt2", "phi3"])
def test_generate_variants_are_bit_identical(arch, kwargs):
    _assert_identical(_runs(model_of(arch), **kwargs))


def test_generate_with_a_forward_wrapped_without_functools_wraps():
    # Training stacks (TRL, PEFT) wrap forward; generate() then does not see logits_to_keep and does not pass 1,
    # and Phi3's override sends None (upstream issue 47530): prepare-inputs-logits-to-keep drops it.
    from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad, tiny_model
    from hf_genfix.oracles.decode import DEFAULT_ROWS

    model_of("phi3")  # skips where phi3 does not exist; patches decided
    model = tiny_model("phi3")
    inner = model.forward

    def forward(*args, **kwargs):
        return inner(*args, **kwargs)

    model.forward = forward
    ids, mask = left_pad(DEFAULT_ROWS)
    with quiet_transformers():
        run = generate_steps(model, ids, mask, max_new_tokens=3, pad_token_id=0)
    check_rows_against_reference(model, DEFAULT_ROWS, run, "phi3 generate() with a wrapped forward")
