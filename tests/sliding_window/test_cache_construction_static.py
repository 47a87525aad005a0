"""Static sliding-window caches fed several tokens at a time, on the installed release (patch
sliding-window-static-chunk on 4.56.x).

- chunked forwards through a ``StaticCache`` (chunked prefill by hand: chunks that end inside the window, cross
  it, and arrive on a full window), every position against one no-cache forward;
- continuing a returned static cache with ``generate()``: a first run, then a new turn of several tokens per row
  appended and a second run on the same cache (batch 1 and a left-padded batch of 3), every step of the second run
  against the no-cache forward of each row's whole sequence.

Before 4.56 a ``StaticCache`` holds every position in every layer (the old sliding cache was a separate class), so
these scenarios are the plain static path there: the oracle is the same.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from cache_construction_models import (  # noqa: E402, F401 (patches_decided: fixture)
    check_continuing_with_a_new_turn, model, patches_decided, skip_old_gemma2,
)
from hf_genfix.oracles import sliding as sw  # noqa: E402
from hf_genfix.oracles.sliding_static import check_chunks, static_cache  # noqa: E402

W = sw.WINDOW


# (model, attention, chunk sizes (then one token at a time), row length): every hybrid layout, both kernels,
# chunks ending before / across / after the window edge, up to 4x the window.
CHUNKS = [
    ("mistral", "eager", (5, 6, 4), 3 * W),
    ("mistral", "sdpa", (12, 3, 9), 4 * W),
    ("gemma2", "eager", (4, 2, 7), 3 * W),
    ("gemma2", "sdpa", (10, 10), 3 * W),
    ("gemma3", "eager", (5, 6, 4), 3 * W),
    ("qwen2", "sdpa", (3, 9, 5), 3 * W),
    ("cohere2", "eager", (9, 8), 3 * W),
    ("gemma4", "sdpa", (5, 6, 4), 3 * W),
]


@pytest.mark.parametrize("name, attn, chunks, length", CHUNKS, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CHUNKS])
def test_chunked_forward_through_a_static_cache(name, attn, chunks, length):
    skip_old_gemma2(name)
    m = model(name, attn)
    row = sw.prompts(length, seed=len(chunks))[0]
    check_chunks(m, row, chunks, static_cache(m, 1, length + 4), f"{name}/{attn} static cache")


# (model, attention, prompt lengths, first run, new-turn tokens, second run)
CONTINUE = [
    ("mistral", "eager", (12,), W, 5, 2 * W),
    ("gemma2", "sdpa", (12, 5, 9), W, 4, 2 * W),
    ("gemma3", "eager", (10, 14, 7), W, 6, W),
    ("qwen3", "sdpa", (11,), W, 5, W),
]


@pytest.mark.parametrize("name, attn, lengths, first, turn, second", CONTINUE,
                         ids=[f"{c[0]}-{c[1]}-batch{len(c[2])}" for c in CONTINUE])
def test_continuing_a_returned_static_cache(name, attn, lengths, first, turn, second):
    skip_old_gemma2(name)
    m = model(name, attn)
    rows = sw.prompts(*lengths)
    cache = static_cache(m, len(rows), max(lengths) + first + turn + second + 2)
    check_continuing_with_a_new_turn(m, rows, first, turn, second, f"{name}/{attn} continued static cache", cache=cache)
