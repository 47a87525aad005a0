"""sliding-window-gemma2-decode-mask / -cohere2-decode-mask: the sliding layers of Gemma-2 (4.46-4.48.1) and
Cohere-2 (4.48.0-4.48.1, its first releases) mask the wrong keys once a cache is in use.

The defect. ``Gemma2DecoderLayer.forward`` and ``Cohere2DecoderLayer.forward`` (one copied from the other) apply
the window of a sliding layer to the model's 4D mask as ``torch.tril(ones, diagonal=-sliding_window)``: by the
query's row in this call, not by its position in the sequence. That is only right for a call that starts at
position 0 (a no-cache forward, a prefill). Then:

- with the default cache (``HybridCache``), a sliding layer keeps a ring of ``sliding_window`` slots, which rolls
  once the sequence is longer than the window and then holds the last ``window`` positions; the mask has one column
  per position of the whole cache and is only sliced for a one-column mask (``if attention_mask.shape[-1] <= 1``,
  the key length where the query length was meant), so the attention takes the first ``window`` columns -- the
  padding of positions ``0 .. window-1`` -- for keys that are the last ones;
- with a dynamic cache (which generate() uses for assisted decoding) every key is kept, and a decoding step's
  query row 0 gets no window at all: it attends to every earlier token.

- with a ``SlidingWindowCache`` (``cache_implementation="sliding_window"`` on a model whose every layer slides;
  found by the sweep's left-padded-cache-implementations on 4.48.0, once the differential judged its runs one by
  one), the model's mask has one column per position, ``0 .. last``, while the ring holds the last ``window``
  positions in order; a decoding step's one-column test slices nothing, so the attention takes the first
  ``window`` columns for the ring's keys: every left-padded row masks real keys as its padding (0.0506 on the
  sweep's tiny Cohere-2, 4.48.0). Unpadded rows read the same values either way (all columns allowed).

Every step past the window is silently wrong: left-padded batches, runs past the window, assisted decoding
(0.1-0.34 on the tiny models). On Gemma-2 4.48.0-4.48.1 the same layer is hidden behind a crash (the hybrid cache
is not told which layers slide: ``sliding-window-hybrid-update-kwargs``); with that fixed, this defect shows as
on 4.47. 4.48.2 slices the hybrid cache's columns ``[last - window, last)`` in both models and is right with it
(a dynamic cache there raises a shape error in assisted decoding: loud).

Detection. A tiny model (one sliding and one full layer, ``sliding_window=8``), rows of 12 and 5 tokens
left-padded, 8 greedy tokens with the default (hybrid) cache, and a 5-token prompt with 12 tokens on a dynamic
cache: every row and step against a no-cache forward of the unpadded row (``probe``).

Correction. Around the decoder layer's ``forward`` of a sliding layer given a 4D mask and a cache (not
flash-attention, whose 2D mask upstream slices itself): the window is applied by position (key ``j`` is masked for
the query at ``cache_position[i]`` when ``j <= cache_position[i] - window``), and for a ``HybridCache`` the columns
the ring holds are taken, ``[offset, offset + max(query, window))`` with ``offset = max(0, last - max(query,
window))`` and ``last`` the position after the call's last token (4.48.2's slicing). Upstream's own row band then
masks nothing more (its keys are a subset of those). For a ``SlidingWindowCache``, on a decoding step of one
token once the ring is full (the mask's columns are the positions ``0 .. last``, ``last + 1 >= window``), the
columns of the positions the ring holds are taken, ``[last + 1 - window, last + 1)``; its other calls (a prefill
from position 0, which upstream gets right; a step before the ring is full, or several tokens after a cache, which
upstream fails loudly or writes into one slot) go to upstream. Without a cache (the first rows start at position
0) the mask goes to upstream untouched, and so does a cache of any other layout (a static cache: which key a
column holds is the cache's business).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from hf_genfix.toolkit import bound_arguments

GEMMA2 = "transformers.models.gemma2.modeling_gemma2:Gemma2DecoderLayer.forward"
COHERE2 = "transformers.models.cohere2.modeling_cohere2:Cohere2DecoderLayer.forward"


def install_gemma2(patcher: Any) -> None:
    _install(patcher, GEMMA2)


def install_cohere2(patcher: Any) -> None:
    _install(patcher, COHERE2)


def _install(patcher: Any, layer: str) -> None:
    patcher.require(layer, "attention_mask", "past_key_value", "cache_position")
    patcher.wrap(layer, sliding_layer_forward)


@functools.cache
def _slices_by_position(forward: Any) -> bool:
    """Whether the layer's forward takes 4.48.2's ``last_cache_position`` (read once per function: the wrapper runs
    for every layer at every step)."""
    return "last_cache_position" in inspect.signature(forward).parameters


def sliding_layer_forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    from transformers.cache_utils import DynamicCache, HybridCache, SlidingWindowCache

    if not getattr(instance, "is_sliding", False) or instance.config._attn_implementation == "flash_attention_2":
        return wrapped(*args, **kwargs)
    if _slices_by_position(wrapped):
        return wrapped(*args, **kwargs)  # 4.48.2's layer: it slices by position itself (a patch forced there)
    try:
        call = bound_arguments(wrapped, args, kwargs)
    except TypeError:
        return wrapped(*args, **kwargs)  # upstream raises its own error for a call it does not take
    mask, cache, position = call.get("attention_mask"), call.get("past_key_value"), call.get("cache_position")
    if mask is None or mask.dim() != 4 or cache is None or position is None:
        return wrapped(*args, **kwargs)
    window = instance.sliding_window
    if isinstance(cache, SlidingWindowCache):
        last = int(position[-1]) + 1
        if position.shape[0] != 1 or mask.shape[-2] != 1 or mask.shape[-1] != last or last < window:
            return wrapped(*args, **kwargs)  # not a one-token step on a full ring, by position: upstream's
        # The ring holds positions [last - window, last) in order: their columns, and the band bans none of them.
        call["attention_mask"] = mask[:, :, :, last - window: last]
        return wrapped(**call)
    if not isinstance(cache, (HybridCache, DynamicCache)):
        # A layout this correction does not know (a static cache): which key a column holds is the cache's
        # business, so upstream decides.
        return wrapped(*args, **kwargs)
    import torch

    keys = torch.arange(mask.shape[-1], device=mask.device)
    banned = keys[None, :] <= position.to(mask.device)[:, None] - window  # (query, key), by position
    mask = torch.where(banned[None, None], torch.finfo(mask.dtype).min, mask)
    if isinstance(cache, HybridCache):
        span = max(int(position.shape[0]), window)
        offset = max(0, int(position[-1]) + 1 - span)
        mask = mask[:, :, :, offset: offset + span]
    call["attention_mask"] = mask
    return wrapped(**call)
