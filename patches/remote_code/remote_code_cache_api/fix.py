"""remote-code-cache-api: remote-code ``forward`` written for the old cache API fails on the cache it is given.

The defect. Remote-code models use the cache inside ``forward`` the way the release they were written for
allowed, and ``generate()`` now hands them a ``DynamicCache`` that no longer has it:

- Cache-class code (4.36 - 4.40 style: old Phi-3, DeepSeek-V2, MiniCPM) calls
  ``past_key_values.get_usable_length(seq_len)`` in the model and ``past_key_value.get_usable_length(kv_len,
  layer_idx)`` in attention, ``seen_tokens``, ``key_cache`` / ``value_cache``, ``cache[i][0]``, and converts
  with ``DynamicCache.from_legacy_cache()`` / ``to_legacy_cache()``. Measured with the tiny families of
  ``hf_genfix.oracles.legacy_models``: 4.40.2 - 4.53.3 pass; 4.54.0 removed ``get_usable_length`` and
  ``seen_tokens`` (4.54.0 - 5.24.0: ``AttributeError: 'DynamicCache' object has no attribute
  'get_usable_length'``); 5.0.0 also removed ``from_legacy_cache`` / ``to_legacy_cache`` and ``cache[i]``.
- Tuple-era code (InternLM2 first releases, ChatGLM3) indexes ``past_key_values[layer][0]`` as tensors and
  returns per-layer ``(key, value)`` tuples. From 4.54 ``generate()`` hands it a ``DynamicCache`` it cannot index
  (``'NoneType' object has no attribute 'shape'`` on 4.54.0 - 4.57.6, 5.1.0 - 5.24.0; 5.0.0 passes).

Detection (``probe``): the tiny Phi-3-style remote repo must load and generate like its no-cache reference,
each decode step feeding one token and the cache.

Correction. ``forward`` of remote-code model classes (``transformers_modules.*``, wrapped as they are created)
whose module uses one of those names (read from its source) translates at the outermost call, and only the
cache it was given; code written for the current API is passed through untouched:

- Cache-class code gets a ``LegacyCacheView`` of the real cache (the view of ``legacy-cache``: ``seen_tokens``,
  ``get_usable_length()``, ``get_max_length()`` with its 4.40 meaning, tuple indexing, ``key_cache``); where
  ``from_legacy_cache`` is gone (5.0+) a missing or tuple cache becomes a view of a ``DynamicCache`` holding it,
  so that the old code never needs the removed classmethod. The real cache goes back into the outputs.
- Tuple-era code gets the tuples (None while the cache is empty), in its own layout, recognised from the tuples
  its forward returns (``_tuple_layout``: ``[batch, heads, seq, dim]``, ChatGLM2's ``[seq, batch, heads, dim]``,
  Qwen-1's ``[batch, seq, heads, dim]``, merged heads, Bloom / Falcon ``[batch * heads, ...]``, a stacked
  ``[2, batch, heads, seq, dim]``), and the new positions it returns are appended to the real cache (batch first,
  sequence second to last), which goes back into the outputs: ``generate()`` sees the cache it passed, one token
  per step reaches ``forward``. After every forward each layer must hold the positions held before plus the
  tokens fed (for cache-class code too: the cache it updated); a layout that cannot be told, or a cache of
  another length, raises ``LayoutUnknown`` (naming the class, this patch and
  ``HF_GENFIX_REMOTE_CODE_CACHE_API=off``) instead of a guess. Before the layout was read
  (two layouts known), the tiny Qwen-1-style family on 5.24.0 had its prompt stored with the head count as its
  length and nothing appended (the tiny file then fails on its mask; the real Qwen-1 file generated wrong tokens,
  where upstream crashes).
Nothing changes for calls that pass what the old code expects (a tuple, or None with a release that still has
``from_legacy_cache`` and code that calls nothing 4.54 removed), and nothing is added to the cache classes. A plain
``model(input_ids)`` (no ``generate()``, no cache given: None) of cache-class code on 4.54 - 4.57 gets the view too: there
``from_legacy_cache(None)`` still builds a ``DynamicCache``, whose missing ``get_usable_length`` the code calls next
(``AttributeError`` without the patch).
"""

from __future__ import annotations

from typing import Any

from hf_genfix.helpers.decode import cache_length, name_positional
from hf_genfix.toolkit.prepare_inputs import copied_on_load
from hf_genfix.toolkit.remote_code import is_remote, uses
from hf_genfix.toolkit.tuple_caches import LegacyCacheView, legacy_tuples, mismatch, recognise, settle, tuple_style

FORWARD = "transformers.modeling_utils:PreTrainedModel.forward"
HOOK = "transformers.modeling_utils:PreTrainedModel"
CACHE = "transformers.cache_utils:DynamicCache"
# What cache-class code of 4.36 - 4.5x calls that the cache no longer has (_remote_code.REMOVED_API names).
OLD_CACHE_API = (
    "Cache.get_usable_length()", "Cache.seen_tokens", "Cache.get_max_length() (4.40 meaning)",
    "DynamicCache.from_legacy_cache()", "Cache.to_legacy_cache()", "Cache.key_cache / value_cache",
    "tuple caches (past_key_values[0][0])",
)
# Gone from the cache classes in 4.54.0 while DynamicCache.from_legacy_cache() stayed (until 5.0.0).
GONE_FROM_CACHE = ("Cache.get_usable_length()", "Cache.seen_tokens")


def install(patcher: Any) -> None:
    dynamic = patcher.require(CACHE)
    has_from_legacy = hasattr(dynamic, "from_legacy_cache")

    def forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if instance is None:
            return wrapped(*args, **kwargs)
        args, kwargs = name_positional(wrapped, args, kwargs)
        cache = kwargs.get("past_key_values")
        if isinstance(cache, (LegacyCacheView,)):
            return wrapped(*args, **kwargs)
        is_cache = cache is not None and not isinstance(cache, (tuple, list))
        if tuple_style(type(instance)):
            if not is_cache:
                return wrapped(*args, **kwargs)
            kwargs["past_key_values"] = legacy_tuples(cache, type(instance))
            return _tuples_into(wrapped(*args, **kwargs), cache, instance, _new_tokens(kwargs))
        if not uses(type(instance), *OLD_CACHE_API):
            return wrapped(*args, **kwargs)  # code written for the current API: nothing to translate
        if not is_cache:
            if not _use_cache(instance, kwargs):
                return wrapped(*args, **kwargs)
            if has_from_legacy and (cache is not None or not uses(type(instance), *GONE_FROM_CACHE)):
                # Tuples are what the code expects (beam search's are remote-code-reorder-cache's), and what
                # from_legacy_cache() builds still has everything else the code calls.
                return wrapped(*args, **kwargs)
            # 5.0+: old code would call DynamicCache.from_legacy_cache(None / tuples), which is gone; 4.54 - 4.57:
            # it is there, but the cache it builds (a plain model(input_ids), no generate()) has no
            # get_usable_length / seen_tokens, which the code calls next.
            cache = dynamic()
            for layer_idx, (key, value) in enumerate(kwargs.get("past_key_values") or ()):
                cache.update(key, value, layer_idx)
        held, fed = cache_length(cache), _new_tokens(kwargs)
        kwargs["past_key_values"] = LegacyCacheView(cache)
        outputs = _unview(wrapped(*args, **kwargs))
        if fed is not None and _use_cache(instance, kwargs) and cache_length(cache) != held + fed[1]:
            raise mismatch(type(instance), f"after {held} cached positions and {fed[1]} new tokens its forward left "
                                           f"{cache_length(cache)} positions in the cache, not {held + fed[1]}")
        return outputs

    def accept(cls: type) -> bool:
        return is_remote(cls) and not copied_on_load(cls)

    patcher.wrap_subclasses(FORWARD, forward, where=accept, hook=HOOK)


def _use_cache(model: Any, kwargs: dict) -> bool:
    use = kwargs.get("use_cache")
    if use is None:
        use = getattr(getattr(model, "config", None), "use_cache", False)
    return bool(use)


def _unview(outputs: Any) -> Any:
    if isinstance(outputs, dict):
        for key, value in list(outputs.items()):
            if isinstance(value, LegacyCacheView):
                outputs[key] = value.__wrapped__
        return outputs
    if isinstance(outputs, tuple):
        return type(outputs)(v.__wrapped__ if isinstance(v, LegacyCacheView) else v for v in outputs)
    return outputs


def _new_tokens(kwargs: dict) -> tuple[int, int] | None:
    """(batch, new positions) of a forward call, from its ids or embeddings."""
    for name in ("input_ids", "inputs_embeds"):
        value = kwargs.get(name)
        if value is not None and getattr(value, "dim", lambda: 0)() >= 2:
            return int(value.shape[0]), int(value.shape[1])
    return None


def _tuples_into(outputs: Any, cache: Any, model: Any, fed: tuple[int, int] | None) -> Any:
    """Append the positions the old forward added to its returned tuples to ``cache``, in the layout recognised
    from them (``_tuple_layout``); put ``cache`` in their place (outputs of ``return_dict=False`` calls are left as
    the model returned them). After every call each layer of ``cache`` must hold the positions held before plus
    the tokens fed: anything else raises (``LayoutUnknown``) instead of generating from a wrong cache."""
    if not isinstance(outputs, dict):
        return outputs
    returned = outputs.get("past_key_values")
    if not isinstance(returned, (tuple, list)):
        return outputs
    cls = type(model)
    if fed is None:
        raise mismatch(cls, "its forward was given neither input_ids nor inputs_embeds, so the positions its tuple "
                            "cache should hold cannot be checked")
    held = cache_length(cache)  # every layer holds as many positions as the first
    (batch, new), expected = fed, held + fed[1]
    refill = False
    if held:
        layout, refill = settle(cls, returned, batch, expected, cache)
    else:
        layout = recognise(cls, getattr(model, "config", None), returned, batch, expected, cache)
    for layer_idx, layer in enumerate(returned):
        key, value = layout.to_cache(layer, batch)
        if refill:  # the earlier positions went in in a provisional layout: all of them again, in the right one
            _replace(cache, layer_idx, key, value)
        else:
            cache.update(key[..., held:, :], value[..., held:, :], layer_idx)
    view = LegacyCacheView(cache)
    lengths = {int(view[i][0].shape[-2]) for i in range(len(returned))}
    if lengths != {expected}:
        raise mismatch(cls, f"after {held} cached positions and {new} new tokens the cache holds {sorted(lengths)} "
                            f"positions per layer, not {expected}")
    outputs["past_key_values"] = cache
    return outputs


def _replace(cache: Any, layer_idx: int, key: Any, value: Any) -> None:
    """Set a layer's states (4.56+: ``cache.layers``; 4.54 - 4.55: ``key_cache`` / ``value_cache`` lists)."""
    key, value = key.contiguous(), value.contiguous()
    layers = getattr(cache, "layers", None)
    if layers is not None:
        layers[layer_idx].keys, layers[layer_idx].values = key, value
    else:
        cache.key_cache[layer_idx], cache.value_cache[layer_idx] = key, value
