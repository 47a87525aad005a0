"""decoding-beam-recurrent-state: before 5.13, beam search with a cache on Mamba, Mamba-2, Falcon-Mamba or RWKV
continues each beam from another beam's recurrent state (silently wrong tokens): it runs without the cache.

The defect. After every step beam search reorders the cache so that each beam keeps its own past. Up to 5.12,
``GenerationMixin._beam_search`` reorders ``model_kwargs["past_key_values"]`` only. The state-space models
keep their state elsewhere: Mamba, Mamba-2 and Falcon-Mamba under ``cache_params``, RWKV under ``state``. That
state is never reordered, and from the first reordering on the beams read each other's pasts. The tokens then
differ from ``use_cache=False``, which recomputes every state from the tokens. 5.13.0 reorders the cache under
any of its cache names, and refuses in words a cache it cannot reorder: RWKV's "cannot use beam search with a
cache currently".

Detection. The sweep's ``beam-loud`` scenario: loud tiny models (std 0.3), 3 beams, 6 new tokens, with the
cache and without it. The sweep called this "unsupported" until session 15, without upstream refusing anything.

Correction. No hook lets a wrapper reorder the state together with the beams. So when beam search runs with a
cache on a model whose forward takes its cache as ``cache_params`` or ``state`` (and no ``past_key_values``), the
beam search runs without the cache, as with ``use_cache=False``: every step recomputes the states from the tokens,
which is right but slower. One ``HFGenfixWarning`` per model class says so. A cache that already holds a state
(the caller's own, from an earlier turn) cannot be recomputed from the tokens of this call: that call is refused
with a ``ValueError`` naming the model, the release and the ways out (``use_cache=False`` on the whole
conversation, transformers 5.13 or later, or the patch's switch for upstream's output). Models that keep their
cache in ``past_key_values`` (attention and the hybrid models) are passed through untouched, and so is beam
search without a cache. Group and constrained beam search (4.x) have the same flaw and are not covered.
"""

from __future__ import annotations

import inspect
from typing import Any

from hf_genfix import Drift
from hf_genfix._patches.decoding.shared.beam_without_cache import (
    BeamSearchStateNotReordered,
    bind,
    holds_state,
    refusal,
    uses_cache,
    without_cache,
)
from hf_genfix.toolkit import env_name, recorder, warn_once

BEAM = "transformers.generation.utils:GenerationMixin._beam_search"
STATE_KEYWORDS = ("cache_params", "state")  # where Mamba-likes and RWKV take their cache up to 5.12
record = recorder(__name__)


__all__ = ["BeamSearchStateNotReordered", "install"]


def install(patcher: Any) -> None:
    beam = patcher.require(BEAM, "input_ids", "**model_kwargs")
    if _reorders_every_cache(beam):
        # Forced onto 5.13+ (doctor --sweep tries every patch on a failure): there beam search reorders the cache
        # under any cache name and refuses in words one it cannot reorder (RWKV); that refusal is upstream's answer.
        raise Drift("this _beam_search reorders every cache name and refuses what it cannot reorder (5.13+)")
    patcher.wrap(BEAM, _beam_search)


def _reorders_every_cache(beam: Any) -> bool:
    """Whether the release's ``_beam_search`` is 5.13's: it carries the refusal for a cache it cannot reorder."""
    code = getattr(getattr(beam, "__func__", beam), "__code__", None)
    consts = code.co_consts if code is not None else ()
    return any(isinstance(c, str) and "cannot use beam search with a cache" in c for c in consts)


def _beam_search(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    if record.on:
        record.seen()
    keyword = _state_keyword(instance)
    if keyword is None:
        return record.through(wrapped, args, kwargs)
    bound = bind(wrapped, args, kwargs)
    if bound is None or not uses_cache(bound, instance):
        return record.through(wrapped, args, kwargs)
    if holds_state((bound.arguments.get("model_kwargs") or {}).get(keyword)):
        raise refusal(instance, keyword, env_name(record.patch_id), newer="upgrade to transformers 5.13 or later, ")
    args, kwargs = without_cache(bound, (keyword,))  # an empty cache generate() made for the call (5.x): dropped
    warn_once(record.patch_id, type(instance).__name__,
              f"beam search does not reorder the recurrent state of {type(instance).__name__} (its `{keyword}`): "
              f"this beam search runs without the cache (right, slower)", off="for upstream's output")
    if record.on:
        record.changed("beam search of %s without the cache (its %s is not reordered)", type(instance).__name__,
                       keyword)
    return wrapped(*args, **kwargs)


def _state_keyword(model: Any) -> str | None:
    """The keyword a stateful model takes its cache under, when it is not ``past_key_values`` (None otherwise)."""
    if not getattr(type(model), "_is_stateful", False):
        return None
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return None
    if "past_key_values" in params:
        return None
    return next((k for k in STATE_KEYWORDS if k in params), None)
