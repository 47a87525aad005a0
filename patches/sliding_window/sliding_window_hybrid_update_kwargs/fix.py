"""sliding-window-hybrid-update-kwargs: on 4.48.0-4.48.1 Gemma-2 crashes once a sequence passes its window.

The defect. ``HybridCache`` keeps a sliding layer's keys in a ring of ``sliding_window`` slots and a full layer's in
``max_cache_len`` slots. ``HybridCache.update`` learns which kind the layer is from its caller only: the
``sliding_window`` entry of ``cache_kwargs`` picks the ring update, its absence the static one. 4.48.0 moved
Gemma-2 onto the attention-interface refactor and its ``Gemma2Attention`` stopped passing that entry (Cohere-2 kept
it). Every sliding layer then takes the static update: position ``p`` is written to slot ``p`` of a ring of
``window`` slots. That holds while the sequence is shorter than the window; the first prompt longer than it, or
the first decoding step past it, raises ``IndexError: index 8 is out of bounds for dimension 0 with size 8``.
Gemma-2 and PaliGemma 2 (a Gemma-2 language model) cannot generate past the window on these two releases.
4.48.2 passes the entry again.

Detection. A tiny Gemma-2 (one sliding and one full layer, ``sliding_window=8``), rows of 12 and 5 tokens
left-padded, 8 greedy tokens on the default cache: every row and step against a no-cache forward.

Correction. Around ``HybridCache.update``: for a layer the cache itself built as sliding (``is_sliding``, from the
config it was made with) and a call whose ``cache_kwargs`` say nothing about a window, the ring update is chosen,
as the caller meant; the kwargs are copied, never changed in place. Every other call -- a full layer, a caller
that names the window (true or false) -- goes to upstream unchanged. On these releases Gemma-2's own mask of a
sliding layer is also wrong once a cache is in use (the crash hid it): ``sliding-window-gemma2-decode-mask``
covers 4.48.0-4.48.1 too.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments

UPDATE = "transformers.cache_utils:HybridCache.update"


def install(patcher: Any) -> None:
    patcher.require(UPDATE, "key_states", "value_states", "layer_idx", "cache_kwargs")
    patcher.wrap(UPDATE, hybrid_update)


def hybrid_update(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    try:
        call = bound_arguments(wrapped, args, kwargs)
    except TypeError:
        return wrapped(*args, **kwargs)  # upstream raises its own error for a call it does not take
    cache_kwargs = call.get("cache_kwargs")
    if not isinstance(cache_kwargs, dict) or "sliding_window" in cache_kwargs or not _sliding(instance, call):
        return wrapped(*args, **kwargs)
    # The value only has to be true (upstream picks the update by it); the ring's own length is the window.
    call["cache_kwargs"] = dict(cache_kwargs, sliding_window=instance.key_cache[call["layer_idx"]].shape[2])
    return wrapped(**call)


def _sliding(cache: Any, call: dict) -> bool:
    flags, layer = getattr(cache, "is_sliding", None), call.get("layer_idx")
    if flags is None or not isinstance(layer, int) or not 0 <= layer < len(flags):
        return False  # not a layout this fix knows: upstream decides
    return bool(flags[layer])
