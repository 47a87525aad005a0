"""decoding-beam-recurrent-gemma: from 4.49 on, beam search with a cache on RecurrentGemma continues each beam from
another beam's recurrent state (silently wrong tokens): it runs without the cache.

The defect. Beam search reorders the cache after every step so that each beam keeps its own past. RecurrentGemma
keeps its past in its own modules (each recurrent block's RG-LRU state and convolution window, each attention
block's keys and values; 5.24 moved them into a cache of linear-attention layers), and no release reorders it with
the beams: 4.49-4.51 call its ``_reorder_cache``, which computes the reordered tensors and drops them; 4.52 on
reorder ``past_key_values`` only, which RecurrentGemma does not have; 5.24 on reorder a cache whose layers hold
none of it. From the first reordering on, each beam reads another beam's past. 4.46-4.48 raise instead (loud).

Detection. The probe: a loud tiny RecurrentGemma (recurrent, recurrent and attention blocks; the RMSNorm scales
drawn around those of a trained model: with the zero scales that 4.57+ initialise, the tiny model's beams keep
their order and show nothing), 3 beams and 6 new tokens with the cache and without it: the two must be the same.
Wrong on 4.49.0-5.25.0.

Correction. When beam search runs with a cache on RecurrentGemma, it runs without it, as with ``use_cache=False``:
every step recomputes the states from the tokens, which is right but slower. Up to 5.23 the blocks' states are
first set up for the call's rows, as a cached call does at its first position (without a cache RecurrentGemma still
reads them, and a state left by a call with another number of rows would not broadcast), and put back as they were
once the call returns, so that the call leaves no state sized for its beams behind. 4.46-4.48 raise on beam
search with the cache (a keyword the model does not take, a shape error) and run without it: that error is gone too. One ``HFGenfixWarning`` per model
class says so. A cache that already holds a past (the caller's own, from an earlier call) cannot be recomputed from
this call's tokens: that call is refused with a ``ValueError`` naming the model, the release and the ways out.
Every other model, and beam search without a cache, are passed through untouched.
"""

from __future__ import annotations

import inspect
from typing import Any

from hf_genfix._patches.decoding.shared.beam_without_cache import (
    BeamSearchStateNotReordered,
    bind,
    holds_state,
    refusal,
    uses_cache,
    without_cache,
)
from hf_genfix.helpers.decode import cache_length
from hf_genfix.toolkit import env_name, recorder, warn_once

BEAM = "transformers.generation.utils:GenerationMixin._beam_search"
MODEL_TYPES = ("recurrent_gemma",)
CACHE_KEYWORDS = ("past_key_values", "cache")
record = recorder(__name__)

__all__ = ["BeamSearchStateNotReordered", "install"]


def install(patcher: Any) -> None:
    patcher.require(BEAM, "input_ids", "**model_kwargs")
    patcher.wrap(BEAM, _beam_search)


def _beam_search(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    if record.on:
        record.seen()
    if getattr(getattr(instance, "config", None), "model_type", None) not in MODEL_TYPES:
        return record.through(wrapped, args, kwargs)
    bound = bind(wrapped, args, kwargs)
    if bound is None or not uses_cache(bound, instance):
        return record.through(wrapped, args, kwargs)
    model_kwargs = bound.arguments.get("model_kwargs") or {}
    for keyword in CACHE_KEYWORDS:
        cache = model_kwargs.get(keyword)  # else an empty cache generate() made for the call (5.24+): dropped
        if cache is not None and _holds_past(cache):
            raise refusal(instance, keyword, env_name(record.patch_id))
    ids = bound.arguments.get("input_ids")
    args, kwargs = without_cache(bound, CACHE_KEYWORDS)
    warn_once(record.patch_id, type(instance).__name__,
              f"beam search does not reorder the recurrent state of {type(instance).__name__} with the beams: this "
              f"beam search runs without the cache (right, slower)", off="for upstream's output")
    if record.on:
        record.changed("beam search of %s without the cache (its state is not reordered)", type(instance).__name__)
    kept = _module_states(instance)
    try:
        if ids is not None:
            _fresh_states(instance, ids)
        return wrapped(*args, **kwargs)
    finally:
        # The modules' states as they were before the call: the uncached path reads them too (times zero), so ones
        # sized for this call's beams would break a later uncached call with another number of rows.
        for module, name, value in kept:
            setattr(module, name, value)
        before = {(id(module), name) for module, name, _ in kept}
        for module, name, _ in _module_states(instance):
            if (id(module), name) not in before:
                delattr(module, name)  # set up by this call only


STATE_ATTRIBUTES = ("recurrent_states", "conv1d_state", "key_states", "value_states")


def _module_states(model: Any) -> list[tuple[Any, str, Any]]:
    """(module, attribute, value) for every state RecurrentGemma keeps in its modules (up to 5.23)."""
    return [(module, name, vars(module)[name]) for module in model.modules() for name in STATE_ATTRIBUTES
            if name in vars(module)]


def _fresh_states(model: Any, ids: Any) -> None:
    """Zero states for this call's rows (beams included) in the modules that keep them (up to 5.23).

    Without a cache RecurrentGemma still reads its RG-LRU state (times zero at position 0): one left by an earlier
    call with another number of rows fails to broadcast (4.56.2: "The size of tensor a (3) must match the size of
    tensor b (4)"). A cached call sets them up the same way at its first position; 5.24+ keep no state in modules.
    """
    backbone = getattr(model, "model", None)
    setup = getattr(backbone, "_setup_cache", None)
    if setup is None:
        return
    try:
        parameters = inspect.signature(setup).parameters
    except (TypeError, ValueError):
        return
    if list(parameters)[:3] != ["config", "batch", "device"]:
        return
    weight = next(model.parameters())
    setup(model.config, ids.shape[0], ids.device, weight.dtype)


def _holds_past(cache: Any) -> bool:
    """Whether ``cache`` holds positions from earlier tokens (an empty cache generate() made does not)."""
    try:
        return cache_length(cache) > 0
    except (TypeError, ValueError):
        # A cache that cannot say (5.24's linear-attention layers refuse get_seq_length): empty only if no layer
        # holds a tensor yet.
        return holds_state(cache)
