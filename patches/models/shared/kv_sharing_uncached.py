"""model-gemma3n-uncached-kv-sharing / model-gemma4-uncached-kv-sharing (one patch per model, one fix): without a
cache, Gemma-3n's and Gemma-4's KV-sharing layers compute keys and values of their own instead of reusing those of
the layer they share with, so a forward or generate() with ``use_cache=False`` -- and, on 4.53-4.57, every forward
in training mode -- computes another function than the cached path and the fixed releases (Gemma-3n 4.53.0, where
it first ships, to 5.5.4, fixed in 5.6.0; Gemma-4 5.5.0 to 5.5.2, fixed in 5.5.3).

The defect. The last ``num_kv_shared_layers`` layers of these models have no keys and values of their own: they
reuse the full-length keys and values of the last earlier layer of their type (``kv_shared_layer_index``), which
that layer stores (``store_full_length_kv``). Up to the fix, the store and the reuse both went through the cache
object (``past_key_values.shared_layers``), guarded by ``past_key_values is not None``: with no cache the sharing
layers fall through to their own ``k_proj``/``v_proj`` (weights a checkpoint trained with sharing never used; 5.6's
Gemma-3n and 5.5.3's Gemma-4 no longer have them), and every logit after the first shared layer is off. A tiny
Gemma-3n saved on 5.25.0 and loaded on 4.53.3, 4.57.6, 5.2.0 and 5.5.4: the cached forward matches 5.25.0 to
2.4e-06, the uncached one is off by 3.2-4.0. Whoever calls ``model(ids, use_cache=False)`` to score, evaluates or
generates with ``use_cache=False``, or (4.53-4.57, where no cache is made in training mode) fine-tunes, gets that
other function. The fixed releases hand a per-call ``shared_kv_states`` dict to every layer, cache or not.

Detection. Each patch's ``probe()``: a loud tiny model with one KV-sharing layer; a forward of a 12-token prompt
with ``use_cache=False`` against the same forward with a cache (the path the fixed releases agree with).

Correction (``share_without_cache``). The text model's forward, called with no cache and ``use_cache`` off, gets a
fresh ``DynamicCache`` and ``use_cache=True`` -- the path upstream itself takes for a default call in eval mode --
and the cache is dropped from its output, which is rebuilt without it as ``use_cache=False`` returns it. What stays
upstream's: a config with no sharing layer, a call that has or makes a cache, a tuple output (``return_dict=False``),
and training with gradient checkpointing: its recomputed layers would write the cache a second time, so that call is
left to upstream with a one-time warning that it computes the unshared function.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import hidden_from_warnings, recorder, signature, warn_once

TEXT_MODELS = {
    "gemma3n": "transformers.models.gemma3n.modeling_gemma3n:Gemma3nTextModel.forward",
    "gemma4": "transformers.models.gemma4.modeling_gemma4:Gemma4TextModel.forward",
}
# The same path as a default cached call in eval mode, bitwise; a caller who asked for no cache gets no cache.
NOT_BITWISE = ()


def install(patcher: Any, model_type: str) -> None:
    target = TEXT_MODELS[model_type]
    patcher.require(target, "past_key_values", "use_cache")
    record = recorder(patcher.patch_id)
    patcher.wrap(target, lambda wrapped, instance, args, kwargs:
                 share_without_cache(wrapped, instance, args, kwargs, record))


@hidden_from_warnings
def share_without_cache(wrapped: Any, instance: Any, args: tuple, kwargs: dict, record: Any) -> Any:
    """The text model's forward: with no cache and ``use_cache`` off, the cached path, and no cache returned."""
    if record.on:
        record.seen()
    config = getattr(instance, "config", None)
    if not getattr(config, "num_kv_shared_layers", 0):  # no layer shares: nothing differs without a cache
        return wrapped(*args, **kwargs)
    bound = signature(wrapped).bind(*args, **kwargs)
    arguments = bound.arguments
    extra = arguments.get("kwargs") or {}
    use_cache = arguments.get("use_cache")
    use_cache = getattr(config, "use_cache", True) if use_cache is None else use_cache
    if arguments.get("past_key_values") is not None or extra.get("return_dict", arguments.get("return_dict")) is False:
        return wrapped(*args, **kwargs)
    if use_cache and not instance.training:
        return wrapped(*args, **kwargs)  # upstream makes a cache: the sharing layers read it
    if instance.training and getattr(instance, "gradient_checkpointing", False):
        warn_once(record.patch_id, type(instance).__name__,
                  f"{type(instance).__name__}: training with gradient checkpointing computes the KV-sharing layers "
                  f"from keys and values of their own (no cache reaches them), not the shared ones; hf_genfix "
                  f"cannot correct that safely (recomputed layers would write a cache twice)")
        return wrapped(*args, **kwargs)
    from transformers.cache_utils import DynamicCache

    try:
        cache = DynamicCache(config=config)
    except TypeError:  # before 4.56: no config argument (every layer full-length, as upstream's own cache there)
        cache = DynamicCache()
    arguments["past_key_values"] = cache
    arguments["use_cache"] = True
    if record.on:
        record.changed("a forward without a cache run through a cache of its own (%d KV-sharing layers)",
                       config.num_kv_shared_layers)
    out = wrapped(*bound.args, **bound.kwargs)
    if isinstance(out, tuple) or getattr(out, "past_key_values", None) is not cache:
        return out
    # As use_cache=False returns it: the same output class, without a cache (a None field is no key of a ModelOutput).
    return type(out)(**{key: value for key, value in out.items() if key != "past_key_values"})
