"""Shared by the encoder-decoder static-cache fixes (``model-led-static-cache``, ``model-fsmt-static-cache``): the
additive mask that hides a static self-attention cache's unfilled slots from a decoder that builds none.

A static cache layer holds ``max_cache_len`` key slots from the first step on; the slots not yet written are zeros,
and a decoder that passes no self-attention mask (upstream skips it for a single new token, or for every cached
step) weights them. The mask written here shows a query at position ``past + i`` the slots ``0 .. past + i``
(causal over what is written), and nothing after: what the dynamic cache, which holds only the written keys,
attends to.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable


class StaticCacheUnsupported(RuntimeError):
    """A decoder with a static self-attention cache whose unfilled slots cannot be masked safely here."""

CACHE_NAMES = ("cache", "past_key_values", "past_key_value", "layer_state")


def parameters(function: Any) -> list[str]:
    return list(inspect.signature(function).parameters)


def argument(names: list[str], args: tuple, kwargs: dict, name: str) -> Any:
    if name in kwargs:
        return kwargs[name]
    index = names.index(name) if name in names else len(args)
    return args[index] if index < len(args) else None


def static_layer(cache: Any, layer_idx: Any) -> Any:
    """The static self-attention layer of ``cache`` for ``layer_idx``; None for any other cache (upstream's)."""
    self_cache = getattr(cache, "self_attention_cache", None)
    layers = getattr(self_cache, "layers", None)
    if not isinstance(layer_idx, int) or not layers or layer_idx >= len(layers):
        return None
    layer = layers[layer_idx]
    if not getattr(layer, "is_compileable", False) or getattr(layer, "is_sliding", False):
        return None
    return layer if isinstance(getattr(layer, "max_cache_len", None), int) else None


def unfilled_mask(layer: Any, queries: int, batch: int, dtype: Any, device: Any, cache_position: Any,
                  where: str) -> Any:
    """The additive ``(batch, 1, queries, max_cache_len)`` mask over ``layer``'s slots for the next ``queries`` keys.

    The write position is the one the layer's ``update`` uses: the ``cache_position`` handed to it when the model
    passes one, else the layer's running count (``cumulative_length``, 5.x). A layer that has neither (a release
    whose static layer writes at ``arange(new)`` when not told where) cannot be masked truthfully: a clear error.
    """
    import torch

    if cache_position is not None:
        past = int(cache_position.reshape(-1)[0])
    elif hasattr(layer, "cumulative_length"):
        past = int(layer.cumulative_length) if getattr(layer, "is_initialized", True) else 0
    else:
        raise StaticCacheUnsupported(where)
    slots = torch.arange(layer.max_cache_len, device=device)
    limit = past + torch.arange(queries, device=device)[:, None]
    mask = torch.zeros(queries, layer.max_cache_len, dtype=dtype, device=device)
    mask = mask.masked_fill(slots[None, :] > limit, torch.finfo(dtype).min)
    return mask[None, None].expand(batch, 1, queries, layer.max_cache_len)


def masking_wrapper(patch: str, model_type: str, mask_name: str, batch_first: bool, names: list[str],
                    refuse: Callable[[], str] | None = None) -> Callable:
    """A wrapt wrapper for a decoder layer's ``forward`` (parameters ``names``) that passes the unfilled-slot mask as
    ``mask_name`` when upstream passes none and the layer's self-attention cache is static; every other call (a
    mask given, a dynamic or no cache, an encoder-decoder cache without a static self-attention part) is upstream's.
    ``refuse()``: why a mask is not enough for this call ("" when it is); the static case raises it instead.
    """

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if argument(names, args, kwargs, mask_name) is not None:
            return wrapped(*args, **kwargs)
        cache = next((c for c in (argument(names, args, kwargs, n) for n in CACHE_NAMES if n in names)
                      if c is not None), None)
        layer = static_layer(cache, getattr(instance.self_attn, "layer_idx", None)) if cache is not None else None
        if layer is None:
            return wrapped(*args, **kwargs)
        hidden = args[0] if args else kwargs[names[0]]
        batch, queries = (hidden.shape[0], hidden.shape[1]) if batch_first else (hidden.shape[1], hidden.shape[0])
        import transformers

        refused = refuse() if refuse is not None else ""
        why = refused or ("this release's static layer is not told where it writes (no cache_position, no running "
                         "count), so the slots cannot be masked")
        where = (f"{model_type}: a static cache (cache_implementation='static') is not supported by hf_genfix's "
                 f"{patch} on transformers {transformers.__version__}: the decoder passes no self-attention mask, so "
                 f"upstream would attend to the static cache's unfilled (zero) slots and generate silently wrong "
                 f"tokens, and {why}. Use the dynamic cache (drop cache_implementation), or set "
                 f"HF_GENFIX_{patch.upper().replace('-', '_')}=off to get upstream's behaviour.")
        if refused:
            raise StaticCacheUnsupported(where)
        mask = unfilled_mask(layer, queries, batch, hidden.dtype, hidden.device,
                             argument(names, args, kwargs, "cache_position"), where)
        if mask_name in kwargs or names.index(mask_name) >= len(args):
            kwargs = dict(kwargs, **{mask_name: mask})
        else:
            args = args[:names.index(mask_name)] + (mask,) + args[names.index(mask_name) + 1:]
        return wrapped(*args, **kwargs)

    return wrapper


def installer(patch: str, model_type: str, target: str, mask_name: str = "attention_mask",
              batch_first: bool = True, refuse: Callable[[], str] | None = None) -> Callable[[Any], None]:
    """``install(patcher)`` for a fix that wraps the decoder layer ``target`` ("module:Class.forward") with
    ``masking_wrapper``."""

    def install(patcher: Any) -> None:
        import importlib

        patcher.require(target, mask_name)
        module, qualified = target.split(":")
        cls = getattr(importlib.import_module(module), qualified.split(".")[0])
        names = parameters(cls.forward)[1:]
        patcher.wrap(target, masking_wrapper(patch, model_type, mask_name, batch_first, names, refuse))

    return install
