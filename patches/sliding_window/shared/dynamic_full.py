"""The cache ``generate()`` prepares for a decoding mode that rewinds it (assisted, prompt lookup): shared by
``sliding-window-dynamic-full``, ``sliding-window-rollback-cache`` and the full-cache patches of MoE models.
"""

from __future__ import annotations

import inspect
from typing import Any

from hf_genfix.toolkit import Recorder, hidden_from_warnings, recorder

PREPARE_CACHE = "transformers.generation.utils:GenerationMixin._prepare_cache_for_generation"


# Drafting modes whose cache generate() rewinds (GenerationMode values; contrastive search is on the Hub in 5.x).
_REWINDING_MODES = ("assisted_generation", "contrastive_search")


def install(patcher: Any) -> None:
    """Wrap generate()'s cache preparation for the installing patch (its recorder says which calls it left)."""
    patcher.require(PREPARE_CACHE, "generation_config", "model_kwargs")
    record = recorder(patcher.patch_id)
    patcher.wrap(PREPARE_CACHE, lambda wrapped, instance, args, kwargs:
                 prepare_rewindable_cache(wrapped, instance, args, kwargs, record))


@hidden_from_warnings
def prepare_rewindable_cache(wrapped: Any, instance: Any, args: tuple, kwargs: dict,
                             record: Recorder) -> Any:
    """Let upstream prepare the cache, then make sure a cache that will be rewound has no sliding layers."""
    call = _bind(wrapped, args, kwargs)
    generation_config, model_kwargs = call.get("generation_config"), call.get("model_kwargs")
    callers = model_kwargs.get("past_key_values") if isinstance(model_kwargs, dict) else None
    result = wrapped(*args, **kwargs)
    if generation_config is None or not isinstance(model_kwargs, dict) or callers is not None \
            or not _will_rewind(instance, generation_config, call):
        # A caller's cache is the caller's business (upstream's behaviour too); a mode that never rewinds keeps
        # upstream's cache: the call and its answer are upstream's.
        record.unchanged()
        return result
    cache = model_kwargs.get("past_key_values")
    if cache is None:
        # 5.0.0 builds no cache at all unless cache_implementation is set; forward() then builds one from the
        # config, with sliding layers. 5.1 builds this full DynamicCache here.
        if (
            generation_config.use_cache is not False
            and not getattr(instance.config, "is_encoder_decoder", False)
            and instance._supports_default_dynamic_cache()
        ):
            from transformers.cache_utils import DynamicCache

            model_kwargs["past_key_values"] = DynamicCache()
        return result
    full_layers(cache)
    return result


def full_layers(cache: Any) -> None:
    """Swap the (still empty) sliding layers of a freshly built dynamic cache for full ones, in place."""
    from transformers import cache_utils

    layers = getattr(getattr(cache, "self_attention_cache", cache), "layers", None)
    sliding = getattr(cache_utils, "DynamicSlidingWindowLayer", None)  # 4.56+
    if not isinstance(layers, list) or sliding is None:
        return
    swaps = {sliding: cache_utils.DynamicLayer}
    linear_sliding = getattr(cache_utils, "LinearAttentionAndSlidingWindowAttentionLayer", None)
    linear_full = getattr(cache_utils, "LinearAttentionAndFullAttentionLayer", None)
    if linear_sliding is not None and linear_full is not None:
        swaps[linear_sliding] = linear_full
    for i, layer in enumerate(layers):
        full = swaps.get(type(layer))  # exact types: a subclass may carry state we do not know how to rebuild
        if full is not None and not getattr(layer, "is_initialized", False):
            layers[i] = full()


def _will_rewind(model: Any, generation_config: Any, call: dict) -> bool:
    if generation_config.cache_implementation == "dynamic_full":
        return True
    # The drafter's own generate() call: its cache is cropped after every round of drafts (4.56 does not ask
    # for "dynamic_full" there; 4.57 does).
    if getattr(generation_config, "is_assistant", False):
        return True
    mode = call.get("generation_mode")
    if mode is None and "assistant_model" in call:
        mode = generation_config.get_generation_mode(call["assistant_model"])
    return str(getattr(mode, "value", mode)) in _REWINDING_MODES


@hidden_from_warnings
def _bind(wrapped: Any, args: tuple, kwargs: dict) -> dict:
    try:
        return dict(inspect.signature(wrapped).bind_partial(*args, **kwargs).arguments)
    except TypeError:
        return {}
