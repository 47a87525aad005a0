"""Beam search run without the cache, for the models whose state this release's beam search does not reorder with
the beams (decoding-beam-recurrent-state: Mamba-likes and RWKV before 5.13; decoding-beam-recurrent-gemma:
RecurrentGemma). Without the cache every step recomputes the states from the tokens: right, slower."""

from __future__ import annotations

import copy
import inspect
from typing import Any

from hf_genfix.toolkit import hidden_from_warnings


class BeamSearchStateNotReordered(ValueError):
    """Beam search with a cache that holds a past on a model whose recurrent state this release's beam search does
    not reorder: without the cache that past cannot be recomputed from the call's tokens."""


def holds_state(cache: Any) -> bool:
    """Whether ``cache`` holds a state from earlier tokens: a layer of it initialised (an empty cache generate()
    made for the call has none); a cache object without layers, given by the caller, cannot be told empty."""
    if cache is None:
        return False
    layers = getattr(cache, "layers", None)
    if layers is None:
        return True
    flags = ("is_initialized", "is_conv_states_initialized", "is_recurrent_states_initialized")
    return any(getattr(layer, flag, False) for layer in layers for flag in flags)


@hidden_from_warnings
def bind(wrapped: Any, args: tuple, kwargs: dict) -> Any:
    """The ``_beam_search`` call bound to its parameters, or None where it does not bind."""
    try:
        return inspect.signature(wrapped).bind(*args, **kwargs)
    except TypeError:
        return None


def uses_cache(bound: Any, instance: Any) -> bool:
    """Whether the bound beam search runs with a cache (generate() puts use_cache into the model kwargs on every
    release; the generation config is a fallback)."""
    model_kwargs = bound.arguments.get("model_kwargs") or {}
    config = bound.arguments.get("generation_config", getattr(instance, "generation_config", None))
    return bool(model_kwargs.get("use_cache", getattr(config, "use_cache", True)))


def refusal(instance: Any, keyword: str, switch: str, newer: str = "") -> BeamSearchStateNotReordered:
    """The error for a call that continues a state given in ``keyword``."""
    import transformers

    return BeamSearchStateNotReordered(
        f"hf_genfix: transformers {transformers.__version__}'s beam search does not reorder the recurrent state of "
        f"{type(instance).__name__} (its `{keyword}`) with the beams, and this call continues a state given in "
        f"`{keyword}`, which beam search without a cache cannot recompute. Run the whole conversation with "
        f"use_cache=False, {newer}or set {switch}=off for upstream's (wrong) output.")


def without_cache(bound: Any, drop: tuple[str, ...]) -> tuple[tuple, dict]:
    """The bound call's arguments with ``use_cache=False`` in the model kwargs and the generation config (a copy),
    and the keywords ``drop`` (the empty cache generate() made for the call) out of the model kwargs."""
    model_kwargs = dict(bound.arguments.get("model_kwargs") or {})
    for keyword in drop:
        model_kwargs.pop(keyword, None)
    model_kwargs["use_cache"] = False
    bound.arguments["model_kwargs"] = model_kwargs
    config = bound.arguments.get("generation_config")
    if config is not None:
        config = copy.copy(config)
        config.use_cache = False
        bound.arguments["generation_config"] = config
    return bound.args, bound.kwargs
