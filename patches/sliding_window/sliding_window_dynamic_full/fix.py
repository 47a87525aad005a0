"""sliding-window-dynamic-full: assisted, prompt-lookup and Gemma-4 MTP decoding crash once past the window.

The defect. Decoding modes that draft tokens and rewind the cache when drafts are rejected (assisted decoding,
prompt lookup, Gemma-4 MTP drafting, contrastive search) need a cache that can be cropped. A sliding layer
(``DynamicSlidingWindowLayer``) keeps only its last ``sliding_window - 1`` tokens, so it cannot be cropped once it
has seen more than that, and ``crop`` raises ``ValueError: Cannot `crop` a `DynamicSlidingWindowLayer` after it
has seen more tokens than its sliding window``. generate() therefore asks for ``cache_implementation=
"dynamic_full"`` in those modes (the candidate generator asks for it for the drafter too): a cache of full layers.
From 5.12.0 ``_prepare_cache_for_generation`` always passes the model config to ``DynamicCache``, which builds
sliding layers from it, so ``"dynamic_full"`` -- set by generate() itself or by a user -- is silently ignored
and every such run crashes as soon as the sequence is longer than the window (upstream issue 46629; 5.12.0 and
5.13.0 measured, 5.11.0 and 5.14.0 pass; fixed in 5.14.0 by PR 47347, which swaps the sliding layers for full
ones after building the cache).

Detection. A tiny Mistral (every layer sliding, window 8), a 12-token prompt and 16 new tokens with assisted
decoding (1-token drafts from a second tiny Mistral): the tokens must be exactly plain greedy's and every step's
logits must match a no-cache forward of the final sequence.

Correction. Around ``GenerationMixin._prepare_cache_for_generation``: when the run will rewind the cache it
prepares (a drafting mode, ``"dynamic_full"``, or the drafter's own generate() call) and the cache is not the
caller's, every ``DynamicSlidingWindowLayer`` of the cache just built becomes a ``DynamicLayer`` (and a linear +
sliding layer a linear + full one), which is what 5.14.0 does. The full layers hold the whole sequence for this
run only; the mask still applies the window, so the logits are unchanged. ``sliding-window-rollback-cache``
reuses this wrapper for 4.56.x and 5.0.x, where the same crash has other causes.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.sliding_window.shared import dynamic_full


def install(patcher: Any) -> None:
    dynamic_full.install(patcher)
