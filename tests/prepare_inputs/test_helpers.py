"""The public helpers ``hf_genfix.GenerationInputPrep`` and ``hf_genfix.DecodeState``: a loop written with them
gives what ``generate()`` gives, on every release, and the documented example runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from prepare_inputs_models import ARCHITECTURES, model_of, skip_known_limit

pytest.importorskip("torch")
pytest.importorskip("transformers")

DOC = Path(__file__).resolve().parents[2] / "docs" / "decode-loop.md"


def test_documented_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks, f"no python example in {DOC}"
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)  # the example asserts it matches generate()
    assert namespace["state"].new_tokens.shape[1] > 0


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_decode_state_loop_equals_generate(arch):
    import torch

    from hf_genfix import DecodeState
    from hf_genfix.oracles import left_pad
    from hf_genfix.oracles.decode import DEFAULT_ROWS

    model = model_of(arch)
    skip_known_limit(arch)
    ids, mask = left_pad(DEFAULT_ROWS)
    # eos = a token some rows pick early, so that finished rows continue with padding as in generate().
    eos = 2
    state = DecodeState(model, ids, mask, eos_token_id=eos, pad_token_id=0)
    with torch.no_grad():
        for _ in range(6):
            out = model(**state.inputs())
            state.advance(out, out.logits[:, -1, :].argmax(-1))
            if state.done:
                break
        expected = model.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=6, pad_token_id=0,
                                  eos_token_id=eos)
    assert torch.equal(state.input_ids, expected)


def test_input_prep_completes_a_mask_the_caller_did_not_grow():
    import torch

    from hf_genfix import GenerationInputPrep
    from hf_genfix.helpers.decode import cache_from_outputs, cache_length
    from hf_genfix.oracles import assert_close, left_pad, reference_logits
    from hf_genfix.oracles.decode import DEFAULT_ROWS

    model = model_of("gpt2")  # absolute positions: wrong positions would show in the logits
    prep = GenerationInputPrep(model)
    ids, mask = left_pad(DEFAULT_ROWS)
    with torch.no_grad():
        first = prep(ids, None, mask)
        assert torch.equal(first["input_ids"], ids)
        out = model(**first)
        ids = torch.cat([ids, out.logits[:, -1:].argmax(-1)], -1)
        cache = cache_from_outputs(out)
        stale = mask.clone()
        step = prep(ids, cache, stale)  # the prompt's mask, never grown
        assert torch.equal(stale, mask), "the caller's mask must not be modified"
        assert step["input_ids"].shape == (3, 1) and torch.equal(step["input_ids"], ids[:, -1:])
        assert step["attention_mask"].shape == (3, cache_length(cache) + 1)
        assert step["attention_mask"][:, -1].tolist() == [1, 1, 1]
        lengths = [len(r) for r in DEFAULT_ROWS]
        assert step["position_ids"][:, 0].tolist() == lengths  # 0-based position of the token after the prompt
        logits = model(**step).logits[:, -1]
    for row, prompt in enumerate(DEFAULT_ROWS):
        assert_close(logits[row], reference_logits(model, list(prompt) + [int(ids[row, -1])])[-1], f"row {row}")


def test_input_prep_takes_the_new_tokens_alone_too():
    import torch

    from hf_genfix import GenerationInputPrep
    from hf_genfix.helpers.decode import cache_from_outputs

    model = model_of("llama")
    prep = GenerationInputPrep(model)
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        cache = cache_from_outputs(model(**prep(ids, None, torch.ones_like(ids))))
    nxt = torch.tensor([[9]])
    whole = prep(torch.cat([ids, nxt], -1), cache, torch.ones(1, 5, dtype=torch.long))
    alone = prep(nxt, cache, torch.ones(1, 5, dtype=torch.long))
    assert torch.equal(whole["input_ids"], alone["input_ids"])
    assert torch.equal(whole["position_ids"], alone["position_ids"]) and alone["position_ids"].tolist() == [[4]]
    assert prep.spec.cache_key in whole


def test_decode_state_refuses_a_cache_out_of_step():
    import torch

    from hf_genfix import DecodeState

    model = model_of("llama")
    ids = torch.tensor([[5, 6, 7, 8]])
    state = DecodeState(model, ids)
    with torch.no_grad():
        out = model(**state.inputs())
    state.advance(out, out.logits[:, -1, :].argmax(-1))
    with pytest.raises(AssertionError, match="out of step"):
        state.advance(out, out.logits[:, -1, :].argmax(-1))  # the same forward again: the cache fell behind
