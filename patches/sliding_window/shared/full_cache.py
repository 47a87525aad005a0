"""sliding-window-full-cache-*: PhiMoE and Qwen2-MoE are silently wrong once a cached sequence passes the window.

The defect. 4.56.0 taught ``DynamicCache(config=...)`` to build a ``DynamicSlidingWindowLayer`` for every layer of a
config that has a ``sliding_window``: the layer keeps only the last ``sliding_window - 1`` keys and returns the kept
keys followed by the new ones. generate() builds the cache that way, and so does the model's own forward when it is
called with ``use_cache`` and no cache. PhiMoE and Qwen2-MoE (with ``use_sliding_window``) were not ported to that
layout on 4.56 and 4.57: their ``_update_causal_mask`` still builds one mask over every position from 0 (the window
as a band), and their attention takes its first columns, ``attention_mask[:, :, :, :key_len]``, for keys that are
the last ``key_len`` positions. Once the sequence is longer than the window, every cached step attends with the
mask of other positions: cached generate() differs from a no-cache forward from the first step past the window
(0.04-0.14 on the tiny models), in plain, padded, chunked, assisted and beam runs alike. 5.0.0 builds both models'
masks from the cache (``create_sliding_window_causal_mask`` with the layer's ``get_mask_sizes``) and is right.

Detection. A tiny model of the type, ``sliding_window=8``, a 10-token prompt and 6 greedy tokens: every step's
logits against a no-cache forward of the final sequence.

Correction. Around the model's (``PhimoeModel`` / ``Qwen2MoeModel``) forward, the cache is given the layout its mask
assumes: every key, as on 4.55. When the forward is about to build its own cache, it gets a ``DynamicCache`` of
full layers; when it is given a ``DynamicCache`` whose sliding layers are still empty (the one generate() or a user
just built), those layers become full ones in place (``sliding_window_dynamic_full.full_layers``). The mask still
applies the window, so the logits are the no-cache forward's. A sliding layer that has already dropped keys (filled
without hf_genfix) cannot be repaired: the call raises a ValueError that says so instead of answering wrong.
Anything else (no cache, a static cache, a full cache) goes to upstream untouched.
"""

from __future__ import annotations

import inspect
from typing import Any

from hf_genfix.toolkit import Recorder, hidden_from_warnings, recorder

PHIMOE = "transformers.models.phimoe.modeling_phimoe:PhimoeModel.forward"
QWEN2_MOE = "transformers.models.qwen2_moe.modeling_qwen2_moe:Qwen2MoeModel.forward"


def install_phimoe(patcher: Any) -> None:
    _install(patcher, PHIMOE)


def install_qwen2_moe(patcher: Any) -> None:
    _install(patcher, QWEN2_MOE)


def _install(patcher: Any, target: str) -> None:
    patcher.require(target, "past_key_values", "use_cache")
    record = recorder(patcher.patch_id)
    patcher.wrap(target, lambda wrapped, instance, args, kwargs:
                 forward_with_full_cache(wrapped, instance, args, kwargs, record))


@hidden_from_warnings
def forward_with_full_cache(wrapped: Any, instance: Any, args: tuple, kwargs: dict,
                            record: Recorder) -> Any:
    """Give the forward a cache that keeps every key (the layout its mask is built for)."""
    from transformers.cache_utils import DynamicCache

    def upstream() -> Any:  # the call as the caller made it, said so
        return record.through(wrapped, args, kwargs)

    if getattr(instance.config, "sliding_window", None) is None:
        return upstream()  # no window (Qwen2-MoE without use_sliding_window): full layers upstream too
    try:
        call = inspect.signature(wrapped).bind(*args, **kwargs).arguments
    except TypeError:
        return upstream()  # upstream raises its own error for a call it does not take
    cache = call.get("past_key_values")
    if cache is None:
        use_cache = call.get("use_cache")
        use_cache = instance.config.use_cache if use_cache is None else use_cache
        if not use_cache or (instance.gradient_checkpointing and instance.training):
            return upstream()  # no cache to build
        # Upstream would build DynamicCache(config=self.config): sliding layers.
        args, kwargs = _with_argument(wrapped, args, kwargs, "past_key_values", DynamicCache())
        return wrapped(*args, **kwargs)
    if not isinstance(cache, DynamicCache):
        return upstream()  # a cache of another class: its layout is the caller's choice
    _full_or_refuse(cache)
    return wrapped(*args, **kwargs)


def _full_or_refuse(cache: Any) -> None:
    from hf_genfix._patches.sliding_window.shared.dynamic_full import full_layers
    from transformers.cache_utils import DynamicSlidingWindowLayer

    full_layers(cache)  # empty sliding layers -> full ones
    for layer in getattr(cache, "layers", ()):
        if isinstance(layer, DynamicSlidingWindowLayer) and getattr(layer, "is_initialized", False):
            kept = layer.keys.shape[-2] if layer.keys is not None else 0
            if layer.cumulative_length > kept:
                raise ValueError(
                    f"hf_genfix: this cache's sliding layers have dropped the keys before the last {kept} tokens, "
                    "but this model's attention mask (transformers 4.56-4.57) assumes a cache that keeps every key: "
                    "the answer would be silently wrong. Let the model or generate() build the cache, or pass "
                    "DynamicCache() (full layers).")


@hidden_from_warnings
def _with_argument(wrapped: Any, args: tuple, kwargs: dict, name: str, value: Any) -> tuple[tuple, dict]:
    """The call's arguments with ``name`` set to ``value`` (where the caller passed it, positionally or not)."""
    index = list(inspect.signature(wrapped).parameters).index(name)
    if len(args) > index:
        return args[:index] + (value,) + args[index + 1:], kwargs
    return args, {**kwargs, name: value}
