"""model-gemma3n-hybrid-cache: on 4.53-4.55, Gemma-3n's KV-sharing layers read a window-sized cache layer by clamped
positions, so a call of several tokens past the window (a prompt longer than the window, a chunk after one) is
silently wrong with ``cache_implementation="hybrid"`` or an explicit ``HybridCache``.

The defect. Gemma-3n's last ``num_kv_shared_layers`` layers reuse the keys and values of an earlier layer of their
kind through the cache: ``layer.keys[:, :, cache_position]``. Where that layer keeps only the window (4.53 and 4.54:
a ``HybridCache``; 4.55: any ``SlidingWindowLayer``), upstream clamps the positions into the window, or takes the
whole window where the call is longer than it: right for one token at a time (the newest slot is the token's own), but
a call of several tokens whose last position is at or past the window reads the wrong slots. A prompt longer than
the window is the plain case: the loud tiny Gemma-3n (window 8, a 13-token prompt) is 0.397 off at its first step on
4.53.3 and 4.55.4 (a full cache: 2e-06). 4.54's ``HybridCache`` has no ``sliding_window`` attribute for that read and
raises AttributeError at every step. 4.56 hands the sharing layers the full keys of the call
(``past_key_values.shared_layers``). Real Gemma-3n checkpoints have a window of 512: any prompt longer than that.

Detection. ``probe()``: the loud tiny Gemma-3n (window 8, the last layer sharing a sliding one's keys), a 13-token
prompt, greedy ``generate(cache_implementation="hybrid")``: every step against the model's forward of the final
sequence with a full (dynamic) cache, whose sharing layers read every key (the no-cache forward is itself wrong
before 5.6 without ``model-gemma3n-uncached-kv-sharing``).

Correction. Two parts.
- ``GenerationMixin._get_cache``: "hybrid" asked for a model whose layers share keys and values is served as
  "static" (every layer full, the model's masks still apply its window: right on 4.53-4.55, and larger only by the
  sliding layers' share). ``sliding-window-hybrid-cache`` serves "sliding_window" the same way on these models.
- ``Gemma3nTextModel.forward``: a cache the user made (a ``HybridCache``; on 4.55 any cache with a
  ``SlidingWindowLayer`` under a sharing layer) fed several tokens whose last position reaches the window raises
  ``Gemma3nHybridCacheUnsupported``, naming the release and ``HF_GENFIX_MODEL_GEMMA3N_HYBRID_CACHE=off``: rebuilding
  the call's full keys would mean rerunning upstream's layers. One token at a time, and calls within the window, are
  upstream's (right). Where upstream cannot read the window at all (4.54's AttributeError) the call stays
  upstream's, error included.
"""

from __future__ import annotations

import sys
from typing import Any

from hf_genfix.helpers.sliding_window import requested_cache, serve_cache
from hf_genfix.toolkit import recorder, signature

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

GET_CACHE = "transformers.generation.utils:GenerationMixin._get_cache"
FORWARD = "transformers.models.gemma3n.modeling_gemma3n:Gemma3nTextModel.forward"


class Gemma3nHybridCacheUnsupported(RuntimeError):
    """Several tokens past the window through a window-sized cache on Gemma-3n, where 4.53-4.55 read it wrong."""


def install(patcher: Any) -> None:
    patcher.require(GET_CACHE, "cache_implementation")
    patcher.wrap(GET_CACHE, _get_cache)
    patcher.require(FORWARD, "past_key_values", "cache_position", "inputs_embeds")
    patcher.wrap(FORWARD, _forward)


def _shares_keys(model: Any) -> bool:
    text = getattr(model, "config", None)
    text = getattr(text, "get_text_config", lambda: text)() if text is not None else None
    return int(getattr(text, "num_kv_shared_layers", 0) or 0) > 0


def _get_cache(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    if requested_cache(args, kwargs) == "hybrid" and _shares_keys(instance):
        if record.on:
            record.changed("cache_implementation 'hybrid' served as 'static' (Gemma-3n's KV-sharing layers)")
        args, kwargs = serve_cache(args, kwargs, "static")
    return wrapped(*args, **kwargs)


def _forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    bound = signature(wrapped).bind(*args, **kwargs)
    cache = bound.arguments.get("past_key_values")
    tokens = bound.arguments.get("input_ids")
    tokens = tokens if tokens is not None else bound.arguments.get("inputs_embeds")
    if cache is None or tokens is None or tokens.shape[1] < 2:
        return wrapped(*args, **kwargs)
    window = _window_read_by_sharing_layers(instance, cache)
    if window is None:
        return wrapped(*args, **kwargs)
    positions = bound.arguments.get("cache_position")
    n = tokens.shape[1]
    last = int(positions[-1]) if positions is not None else int(cache.get_seq_length()) + n - 1
    if last < window:
        return wrapped(*args, **kwargs)
    import transformers

    raise Gemma3nHybridCacheUnsupported(
        f"Gemma-3n with a {type(cache).__name__}: {n} tokens in one call up to position {last}, past its sliding "
        f"window of {window}, are silently wrong on transformers {transformers.__version__} (its KV-sharing layers "
        f"read the window's slots by clamped positions). Use the default cache or cache_implementation='static', "
        f"feed tokens past the window one at a time, upgrade to transformers 4.56 or later, or set "
        f"HF_GENFIX_MODEL_GEMMA3N_HYBRID_CACHE=off to get upstream's behaviour.")


def _window_read_by_sharing_layers(model: Any, cache: Any) -> int | None:
    """The window of the cache layer a sharing layer reads by clamped positions, as this release's attention decides
    it (4.53-4.54: a ``HybridCache`` and a sliding sharing layer, ``cache.sliding_window``; 4.55: the shared layer is a
    ``SlidingWindowLayer``, its ``get_max_cache_shape()``); None where it reads every key or cannot read a window
    (then upstream's call, and its error)."""
    modeling = sys.modules.get(type(model).__module__)
    hybrid = getattr(modeling, "HybridCache", None)
    sliding_layer = getattr(modeling, "SlidingWindowLayer", None)
    for layer in getattr(model, "layers", ()):
        attn = getattr(layer, "self_attn", None)
        source = getattr(attn, "kv_shared_layer_index", None)
        if not getattr(attn, "is_kv_shared_layer", False) or source is None:
            continue
        if sliding_layer is not None:
            layers = getattr(cache, "layers", None)
            if isinstance(layers, (list, tuple)) and source < len(layers) and isinstance(layers[source], sliding_layer):
                return int(layers[source].get_max_cache_shape())
        elif hybrid is not None and isinstance(cache, hybrid) and getattr(attn, "is_sliding", False):
            window = getattr(cache, "sliding_window", None)
            if isinstance(window, int):
                return window
    return None
