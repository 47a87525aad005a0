"""model-glm-moe-dsa-indexer-beam: beam search with GLM-MoE-DSA selects each beam's keys by another beam's index keys
once a sequence is longer than the indexer's top-k (silently wrong tokens), on 5.2-5.10 (5.11 fixed it).

The defect. GLM-MoE-DSA's sparse attention (DSA) has an indexer per layer that scores every past token and lets
the attention see only the ``index_topk`` best (2,048 in the released checkpoints). On these releases the indexer
keeps the keys it scores with on the module itself (``GlmMoeDsaIndexer._cached_keys``), not in the cache that
``generate()`` manages. After every beam-search step ``generate()`` calls ``cache.reorder_cache(beam_idx)``, which
reorders the attention's keys and values but cannot reach the indexer's keys: from then on each beam chooses which
of its own keys to see by another beam's index keys. Within ``index_topk`` every key is chosen whatever the scores,
so short sequences are right; past it the beams' tokens are not the model's. ``use_cache=False`` is right.
5.11.0 keeps the index keys in the cache (``past_key_values.update_indexer``), reordered with the rest.

Detection. The sweep's ``beam-loud`` scenario on its ``glm_moe_dsa@selection`` layout (top-k 4, below the prompts;
loud weights): beam search with 3 beams and 6 new tokens, with the cache and without it. Measured on every matrix
release from 5.2.0 to 5.10.4 (and 5.8.1): the cached beams part from the uncached ones; 5.11.0 to 5.25.0 are right.

Correction. Two wraps. ``GlmMoeDsaAttention.forward`` notes, for the cache it is given, its layer's indexer when
that indexer keeps its own keys (a weak map from the cache to its indexers: nothing is kept alive, and a cache
meets only the indexers of the model that used it). ``Cache.reorder_cache`` runs upstream's reordering, then
reorders the noted indexers' keys along the batch by the same ``beam_idx``, as 5.11 does. A cache no GLM-MoE-DSA
layer used is reordered exactly as upstream; where the indexer keeps no keys of its own, nothing is noted.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from hf_genfix.toolkit import bound_arguments, recorder, reset_in_child

ATTENTION = "transformers.models.glm_moe_dsa.modeling_glm_moe_dsa:GlmMoeDsaAttention.forward"
REORDER = "transformers.cache_utils:Cache.reorder_cache"

record = recorder(__name__)
# cache -> the indexers that keep their keys for it (both weakly held).
_NOTED: "weakref.WeakKeyDictionary[Any, weakref.WeakSet]" = weakref.WeakKeyDictionary()
_LOCK = reset_in_child(threading.Lock())  # one short update at a time; free in a forked child


def install(patcher: Any) -> None:
    patcher.require(ATTENTION, "past_key_values")
    patcher.require(REORDER, "beam_idx")
    patcher.wrap(ATTENTION, _attention)
    patcher.wrap(REORDER, _reorder_cache)


def _attention(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    indexer = getattr(instance, "indexer", None)
    if indexer is not None and hasattr(indexer, "_cached_keys"):
        cache = bound_arguments(wrapped, args, kwargs).get("past_key_values")
        if cache is not None:
            try:
                with _LOCK:
                    _NOTED.setdefault(cache, weakref.WeakSet()).add(indexer)
            except TypeError:  # a cache that cannot be weakly referenced: upstream's behaviour
                pass
    return wrapped(*args, **kwargs)


def _reorder_cache(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    result = wrapped(*args, **kwargs)
    try:
        with _LOCK:
            indexers = list(_NOTED.get(instance, ()))
    except TypeError:
        return result
    if not indexers:
        return result
    import torch

    beam_idx = bound_arguments(wrapped, args, kwargs).get("beam_idx")
    if not isinstance(beam_idx, torch.Tensor):
        return result
    moved = 0
    for indexer in indexers:
        keys = getattr(indexer, "_cached_keys", None)
        # The indexer's keys are (batch * beams, tokens, index_head_dim), as the cache's batch.
        if isinstance(keys, torch.Tensor) and keys.dim() > 0 and keys.shape[0] == beam_idx.shape[0]:
            indexer._cached_keys = keys.index_select(0, beam_idx.to(keys.device))
            moved += 1
    if record.on and moved:
        record.changed("reordered %d sparse-attention indexers' keys with the cache", moved)
    return result
