"""sliding-window-kv-shared-zero: 5.5-5.13, Gemma-4 without KV-shared layers (the large checkpoints' layout)
gets no sliding cache layers: KV memory grows with the whole sequence instead of the window.

The defect. ``DynamicCache(config=...)`` drops the cache of the last ``num_kv_shared_layers`` layers (they reuse
an earlier layer's keys) with ``layer_types[: -config.num_kv_shared_layers]``. With ``num_kv_shared_layers = 0``
that slice is ``layer_types[:0]``, empty, so the cache falls back to creating a full ``DynamicLayer`` for every
layer on first use: outputs stay correct, but every sliding layer keeps every token -- at 16x the window a
sliding layer holds 16x the keys it needs. On 5.5 ``StaticCache`` has the same slice and then has no layers at
all: ``generate(cache_implementation="static")`` raises ``IndexError: list index out of range`` (5.11 guards the
static slice with ``> 0``). The slice exists since 4.56 (for Gemma-3n, whose checkpoints all share layers);
Gemma-4 (5.5) is the first model whose real checkpoints use 0. Fixed upstream in 5.14.0, which computes the
layer types in one place.

Detection. ``probe()``: a tiny Gemma-4 text model (sliding, full; window 8; no shared layers), 10-token prompt,
30 greedy tokens with the default dynamic cache and with a static cache; every step against the no-cache
forward, then the keys each sliding layer still holds must be at most ``W - 1 + q`` (``q = 1``, the last step).

Correction. ``DynamicCache.__init__`` and ``StaticCache.__init__`` are wrapped: after the original ran, a cache
built from a config with ``num_kv_shared_layers == 0`` that came out without layers gets one layer per decoder
layer from ``SlidingWindowPolicy.cached_layer_types`` -- ``DynamicSlidingWindowLayer`` / ``StaticSlidingWindowLayer``
for sliding layers, ``DynamicLayer`` / ``StaticLayer`` for full ones -- exactly what the release builds when
``num_kv_shared_layers > 0``. A cache that has its layers, or a layout with other kinds of layers, is left alone.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

# Read by doctor --sweep --differential: where upstream is right the outputs differ from upstream's by float
# rounding (~1e-7), never by a token.
NOT_BITWISE = ("its sliding cache layers keep the last window of keys instead of every key, so the attention sums "
               "over fewer (masked, zero-weight) keys in another order: the memory bound is the fix")

DYNAMIC_INIT = "transformers.cache_utils:DynamicCache.__init__"
STATIC_INIT = "transformers.cache_utils:StaticCache.__init__"
DYNAMIC_LAYER = "transformers.cache_utils:DynamicLayer"
DYNAMIC_SLIDING = "transformers.cache_utils:DynamicSlidingWindowLayer"
STATIC_LAYER = "transformers.cache_utils:StaticLayer"
STATIC_SLIDING = "transformers.cache_utils:StaticSlidingWindowLayer"


def install(patcher: Any) -> None:
    patcher.require(DYNAMIC_INIT, "ddp_cache_data", "config")
    patcher.require(STATIC_INIT, "config", "max_cache_len")
    full, sliding = patcher.require(DYNAMIC_LAYER), patcher.require(DYNAMIC_SLIDING)
    static_full, static_sliding = patcher.require(STATIC_LAYER), patcher.require(STATIC_SLIDING)

    def dynamic_init(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> None:
        wrapped(*args, **kwargs)
        ddp = args[0] if args else kwargs.get("ddp_cache_data")
        config = args[1] if len(args) > 1 else kwargs.get("config")
        kinds = _unbuilt_layers(instance, config)
        if kinds is not None and ddp is None:
            window = _window(config)
            _set_layers(instance, [sliding(sliding_window=window) if k == _SLIDING else full() for k in kinds])
            if record.on:
                record.changed("built %d dynamic cache layers", len(kinds))
        else:
            record.unchanged()  # a cache with layers, or a config that shares no-kv layers: upstream's cache

    def static_init(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> None:
        wrapped(*args, **kwargs)
        config = args[0] if args else kwargs.get("config")
        length = args[1] if len(args) > 1 else kwargs.get("max_cache_len")
        kinds = _unbuilt_layers(instance, config)
        if kinds is not None:
            window = _window(config)
            _set_layers(instance, [
                static_sliding(max_cache_len=length, sliding_window=window) if k == _SLIDING
                else static_full(max_cache_len=length)
                for k in kinds
            ])
            if record.on:
                record.changed("built %d static cache layers", len(kinds))
        else:
            record.unchanged()

    patcher.wrap(DYNAMIC_INIT, dynamic_init)
    patcher.wrap(STATIC_INIT, static_init)


_SLIDING, _FULL = "sliding_attention", "full_attention"


def _unbuilt_layers(cache: Any, config: Any) -> list[str] | None:
    """The layer kinds to build when ``cache`` came out empty because of ``num_kv_shared_layers == 0``."""
    from hf_genfix.helpers.sliding_window import SlidingWindowPolicy, text_config

    if config is None or getattr(cache, "layers", None):
        return None
    if getattr(text_config(config), "num_kv_shared_layers", None) != 0:
        return None
    kinds = SlidingWindowPolicy.cached_layer_types(config)
    if not kinds or not set(kinds) <= {_SLIDING, _FULL}:
        return None
    return kinds


def _window(config: Any) -> int | None:
    from hf_genfix.helpers.sliding_window import text_config

    return getattr(text_config(config), "sliding_window", None)


def _set_layers(cache: Any, layers: list) -> None:
    # What Cache.__init__(layers=...) sets; the lazily-replicated class is what made every layer full.
    cache.layers = layers
    cache.layer_class_to_replicate = None
