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

from hf_genfix import _record

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
            if _record.on:
                _record.changed("sliding-window-kv-shared-zero", "built %d dynamic cache layers", len(kinds))

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
            if _record.on:
                _record.changed("sliding-window-kv-shared-zero", "built %d static cache layers", len(kinds))

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


def probe() -> dict:
    """Gemma-4 text (no KV-shared layers): correct steps and sliding layers that hold at most W - 1 + q keys,
    with the default dynamic cache and a static one."""
    import torch

    from hf_genfix.oracles import DefectObserved, check_rows_against_reference, left_pad
    from hf_genfix.oracles.generation import GenRun
    from hf_genfix.oracles.sliding import WINDOW, prompts, sliding_model
    from hf_genfix.oracles.sliding_static import kv_held

    model = sliding_model("gemma4")  # the large checkpoints' layout: num_kv_shared_layers = 0
    rows = prompts(10)
    ids, mask = left_pad(rows)
    figures: dict = {}
    for implementation in (None, "static"):
        label = implementation or "dynamic"
        try:
            with torch.no_grad():
                out = model.generate(ids, attention_mask=mask, max_new_tokens=30, do_sample=False,
                                     eos_token_id=None, pad_token_id=0, cache_implementation=implementation,
                                     return_dict_in_generate=True, output_logits=True)
        except IndexError as exc:
            raise DefectObserved(f"generate() with a {label} cache raised IndexError: {exc}") from exc
        run = GenRun(sequences=out.sequences, step_logits=list(out.logits), prompt_width=ids.shape[1])
        check_rows_against_reference(model, rows, run, f"Gemma-4 text, {label} cache", eos_token_id=[])
        sliding = [tokens for kind, tokens, _ in kv_held(out.past_key_values, model.config) if kind == _SLIDING]
        bound = WINDOW - 1 + 1
        if not sliding or max(sliding) > bound:
            raise DefectObserved(
                f"{label} cache: sliding layers hold {sliding or 'no layer of their own'} keys after "
                f"{ids.shape[1] + 30} tokens; the window needs at most {bound}",
                held=max(sliding, default=None), bound=bound)
        figures[f"{label}_sliding_keys_held"] = max(sliding)
    return figures
