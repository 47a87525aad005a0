"""sliding-window-ring-roll: a sliding ring cache drops its oldest token one step early (4.46-4.51).

The defect. ``SlidingWindowCache.update`` and ``HybridCache._sliding_update`` keep a sliding layer's keys in a ring
of ``sliding_window`` slots. Before writing, they roll the ring by one when the write reaches the last slot:
``to_shift = cache_position >= max_cache_len - 1``. The roll is needed once the ring is full (a position of
``sliding_window`` or more), but the test also fires for the write of position ``sliding_window - 1`` itself,
when that slot is still empty: the oldest token (position 0) is dropped, an empty slot is left in its place, and
the token is written after it. That step attends to a zero key instead of position 0, and every later step
inherits the hole. Any run that decodes through position ``window - 1`` (a prompt shorter than the window) is
silently wrong from that step on: Gemma-2 and Cohere-2 with their default hybrid cache, any sliding model with
``cache_implementation="sliding_window"`` (0.03-0.06 on the tiny models). 4.52.0 rewrote the cache layers and is
right.

Detection. A tiny Gemma-2 (default hybrid cache) and a tiny Mistral (``cache_implementation="sliding_window"``),
``sliding_window=8``, a 5-token prompt and 8 greedy tokens: every step against a no-cache forward.

Correction. Around both functions: a write of at most ``max_cache_len`` tokens that ends exactly on the last slot
needs no roll (the slots before it hold the earlier positions, in order); it is written in place at its positions,
which is what the ring holds from 4.52.0. Every other write -- before the last slot, past it, or a prefill longer
than the window -- goes to upstream unchanged.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments

HYBRID = "transformers.cache_utils:HybridCache._sliding_update"
SLIDING = "transformers.cache_utils:SlidingWindowCache.update"


def install(patcher: Any) -> None:
    patcher.require(HYBRID, "cache_position", "layer_idx", "key_states", "value_states", "k_out", "v_out",
                    "max_cache_len")
    patcher.require(SLIDING, "key_states", "value_states", "layer_idx", "cache_kwargs")
    patcher.wrap(HYBRID, hybrid_sliding_update)
    patcher.wrap(SLIDING, sliding_window_update)


def hybrid_sliding_update(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    call = bound_arguments(wrapped, args, kwargs)
    if not _ends_on_last_slot(call["cache_position"], call["max_cache_len"]):
        return wrapped(*args, **kwargs)
    return _write_in_place(call["k_out"], call["v_out"], call["cache_position"], call["key_states"],
                           call["value_states"])


def sliding_window_update(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    call = bound_arguments(wrapped, args, kwargs)
    position = (call.get("cache_kwargs") or {}).get("cache_position")
    if position is None or not _ends_on_last_slot(position, instance.max_cache_len):
        return wrapped(*args, **kwargs)
    layer = call["layer_idx"]
    return _write_in_place(instance.key_cache[layer], instance.value_cache[layer], position, call["key_states"],
                           call["value_states"])


def _ends_on_last_slot(position: Any, size: int) -> bool:
    return 0 < position.shape[0] <= size and int(position[-1]) == size - 1


def _write_in_place(k_out: Any, v_out: Any, position: Any, keys: Any, values: Any) -> tuple:
    k_out[:, :, position] = keys
    v_out[:, :, position] = values
    return k_out, v_out
