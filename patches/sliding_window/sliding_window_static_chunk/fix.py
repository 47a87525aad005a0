"""sliding-window-static-chunk: on 4.56.x a static sliding-window cache breaks on any multi-token step after the
first one.

The defect. 4.56 rebuilt the caches out of per-layer objects; its static sliding layer ``SlidingWindowLayer``
handles exactly two cases: the first forward (any length) and one token at a time. A later forward of several
tokens -- chunked prefill (``generate(prefill_chunk_size=k)``), continuing a returned static cache with a new
user turn, any hand-written loop that feeds a chunk -- raises ``IndexError: index_copy_(): index 8 is out of
bounds for dimension 2 with size 8`` once the chunk reaches past the window, or ``RuntimeError: shape mismatch``
when the cache is already full; ``get_mask_sizes`` also reports ``max(q, W)`` keys where ``W - 1 + q`` are
needed. 4.55 (the old ``SlidingWindowCache``) and 4.57 are correct; upstream fixed it in 4.57.0 (PR 40893) by
giving the layer the general update that 4.56 already had in its subclass ``ChunkedSlidingLayer``.

Detection. ``probe()``: a tiny Mistral (every layer sliding, window 8) fed through a ``StaticCache`` in chunks
of 5, 6 and 4 tokens and then one token at a time, every position's logits against one no-cache forward.

Correction. ``SlidingWindowLayer.update`` and ``.get_mask_sizes`` are wrapped in place: a step of more than one
token on a layer that already holds tokens goes to the general implementation of the same release --
``ChunkedSlidingLayer``'s, which keeps the last ``W`` keys and returns ``W - 1 + q`` of them with the matching
offset (the ``SlidingWindowPolicy.kv_span`` of the step). The first forward and single-token decoding, which are
correct, still run the original code unchanged, so decoding speed is untouched.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

UPDATE = "transformers.cache_utils:SlidingWindowLayer.update"
MASK_SIZES = "transformers.cache_utils:SlidingWindowLayer.get_mask_sizes"
GENERAL = "transformers.cache_utils:ChunkedSlidingLayer"


def install(patcher: Any) -> None:
    patcher.require(UPDATE, "key_states", "value_states", "cache_kwargs")
    patcher.require(MASK_SIZES, "cache_position")
    general = patcher.require(GENERAL)
    patcher.wrap(UPDATE, _route(general.update, query_axis=-2, arg="key_states"))
    patcher.wrap(MASK_SIZES, _route(general.get_mask_sizes, query_axis=0, arg="cache_position"))


def _route(general: Any, query_axis: int, arg: str) -> Any:
    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        tensor = args[0] if args else kwargs[arg]
        # Only a multi-token step on a layer that already holds tokens is broken on 4.56.
        if tensor.shape[query_axis] > 1 and instance.cumulative_length > 0:
            if record.on:
                record.changed("a %d-token step routed to the general layer",
                                tensor.shape[query_axis])
            return general(instance, *args, **kwargs)
        return wrapped(*args, **kwargs)

    return wrapper
