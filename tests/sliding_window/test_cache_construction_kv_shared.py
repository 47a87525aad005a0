"""Gemma-4's caches with and without KV-shared layers, far past the window, on the installed release (patch
sliding-window-kv-shared-zero on 5.5-5.13).

For the large checkpoints' layout (``num_kv_shared_layers = 0``) and the small ones' (the last layers reuse earlier
layers' keys): greedy generation to 16x the window with the default dynamic cache and a static cache, batch 1 and
a left-padded batch of 3, eager and sdpa; every step against the no-cache forward, and after every step no
sliding layer holds more than ``W - 1 + q`` keys (``q`` new tokens in that step) -- the memory the window
promises. Then beam search and continuing from a returned cache.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from cache_construction_models import (  # noqa: E402, F401 (patches_decided: fixture)
    check_beam_search_equals_uncached, check_continuing_with_a_new_turn, model, patches_decided, skip_shared_kv_before_511,
)
from hf_genfix.oracles import DefectObserved, check_rows_against_reference, left_pad  # noqa: E402
from hf_genfix.oracles import sliding as sw  # noqa: E402
from hf_genfix.oracles.generation import GenRun  # noqa: E402
from hf_genfix.oracles.sliding_static import kv_held  # noqa: E402

W = sw.WINDOW


def generate_watching_the_cache(m, rows, new, **kwargs):
    """Greedy generate() of the left-padded ``rows``; returns (GenRun, [(q, most keys on a sliding layer)] per
    step, the returned cache)."""
    import torch

    steps = []

    def hook(module, args, call, output):
        ids = call.get("input_ids")
        q = ids.shape[1] if ids is not None else call["inputs_embeds"].shape[1]
        held = [tokens for kind, tokens, _ in kv_held(output.past_key_values, m.config) if kind == "sliding_attention"]
        steps.append((q, max(held, default=None)))

    ids, mask = left_pad(rows)
    handle = m.register_forward_hook(hook, with_kwargs=True)
    try:
        with torch.no_grad():
            out = m.generate(ids, attention_mask=mask, max_new_tokens=new, do_sample=False, pad_token_id=0,
                             eos_token_id=None, return_dict_in_generate=True, output_logits=True, **kwargs)
    finally:
        handle.remove()
    run = GenRun(sequences=out.sequences, step_logits=list(out.logits), prompt_width=ids.shape[1])
    return run, steps, out.past_key_values


def check_window_memory(steps, what):
    decode = steps[1:]  # the prefill hands attention the whole prompt once, by design
    for i, (q, held) in enumerate(decode, start=1):
        if held is None or held > W - 1 + q:
            raise DefectObserved(f"{what}: after step {i} a sliding layer holds {held} keys; the window needs at "
                                 f"most {W - 1 + q}", held=held, step=i)


# (layout, attention, cache, prompt lengths, new tokens)
RUNS = [
    ("gemma4", "eager", "default", (10,), 16 * W - 10),
    ("gemma4", "sdpa", "default", (12, 5, 9), 3 * W),
    ("gemma4", "sdpa", "static", (10,), 4 * W),
    ("gemma4", "eager", "static", (12, 5, 9), 3 * W),
    ("gemma4-shared-kv", "sdpa", "default", (10,), 16 * W - 10),
    ("gemma4-shared-kv", "eager", "default", (12, 5, 9), 3 * W),
    ("gemma4-shared-kv", "eager", "static", (12, 5, 9), 3 * W),
]


@pytest.mark.parametrize("name, attn, cache, lengths, new", RUNS,
                         ids=[f"{r[0]}-{r[1]}-{r[2]}-batch{len(r[3])}" for r in RUNS])
def test_generation_stays_correct_and_inside_the_window(name, attn, cache, lengths, new):
    skip_shared_kv_before_511(name)
    m = model(name, attn)
    rows = sw.prompts(*lengths)
    kwargs = {} if cache == "default" else {"cache_implementation": cache}
    run, steps, _ = generate_watching_the_cache(m, rows, new, **kwargs)
    what = f"{name}/{attn} {cache} cache, {len(rows)} row(s), {len(rows[0]) + new} tokens"
    check_rows_against_reference(m, rows, run, what, eos_token_id=[])
    check_window_memory(steps, what)


@pytest.mark.parametrize("name", ["gemma4", "gemma4-shared-kv"])
def test_beam_search_equals_uncached(name):
    skip_shared_kv_before_511(name)
    check_beam_search_equals_uncached(model(name, "sdpa"), sw.prompts(12, 6), name)


@pytest.mark.parametrize("name", ["gemma4", "gemma4-shared-kv"])
def test_continuing_from_a_returned_cache(name):
    skip_shared_kv_before_511(name)
    check_continuing_with_a_new_turn(model(name, "eager"), sw.prompts(12, 5, 9), 2 * W, 5, 2 * W, f"{name} continued cache")
