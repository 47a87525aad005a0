"""model-fsmt-cached-positions: FSMT's cached generate() embeds every generated token at the first decoder position on
4.46.0-5.17.0 (silently wrong from the second generated token, with the default cache).

The defect. ``FSMTDecoder.forward`` up to 5.17 computes its positions from the ids it is fed
(``embed_positions(input_ids)``) and, with ``use_cache``, keeps the last one: written for a caller that feeds the
whole decoder sequence every step, as FSMT's own ``prepare_inputs_for_generation`` did up to 4.45. 4.46.0 removed
it; generate() has fed only the new token since, so every step gets the position of a sequence of length one.
5.18.0 fixed it upstream (the embedding adds the cache length: ``make_positions(ids) + past_key_values_length``).
Measured: max logit diff 0.32 from step 1 on 4.46.3-4.50.3, 0.201 on 4.52.4-4.57.6, 0.116 on 5.0.0, 0.126 on
5.13.0 (the sweep's s2s-cached and s2s-padded scenarios); 4.45.2 is right.

Detection. ``doctor --sweep``'s s2s-cached scenario on a tiny FSMT: greedy cached generation, every step against a
no-cache forward of the final sequence.

Correction. ``FSMTDecoder.forward`` is wrapped: for a cached call fed one new token while the cache already holds
``L`` tokens (generate()'s decoding step; on 4.x the cache is FSMT's own list of per-layer dicts, whose ``prev_key``
says ``L``; a cache of any other shape is upstream's), the decoder's positional embedding adds ``L`` to the
positions it makes from the fed ids, as 5.18.0 does (``SinusoidalPositionalEmbedding.forward`` is wrapped and reads
``L`` from a context variable the decoder wrapper sets for the duration of the call: per thread and task, nothing
process-wide). A caller that feeds the whole sequence, the prompt step, an empty cache, the encoder's positions and
``use_cache=False`` are upstream's.
"""

from __future__ import annotations

import contextvars
from typing import Any

from hf_genfix._patches.models.shared.fsmt_positions import CORRECTING

PATCH = "model-fsmt-cached-positions"
DECODER = "transformers.models.fsmt.modeling_fsmt:FSMTDecoder.forward"
EMBEDDING = "transformers.models.fsmt.modeling_fsmt:SinusoidalPositionalEmbedding.forward"

_offset: contextvars.ContextVar[int] = contextvars.ContextVar("hf_genfix_fsmt_position_offset", default=0)


def install(patcher: Any) -> None:
    patcher.require(DECODER, "input_ids", "use_cache")
    patcher.require(EMBEDDING, "input")
    patcher.wrap(DECODER, _decoder)
    patcher.wrap(EMBEDDING, _embedding)


def _cache_length(args: tuple, kwargs: dict) -> int:
    cache = kwargs.get("past_key_values", kwargs.get("cache"))
    if cache is None:
        return 0
    if hasattr(cache, "get_seq_length"):
        return int(cache.get_seq_length())
    # 4.46-4.57: FSMT's own layout, one dict per layer ({"self": {"prev_key": [batch, heads, length, head_dim]}}).
    # Any other object: no length known, upstream's positions.
    try:
        key = cache[0]["self"]["prev_key"]
    except (TypeError, KeyError, IndexError):
        return 0
    return int(key.shape[2]) if getattr(key, "dim", lambda: 0)() == 4 else 0


def _decoder(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    ids = args[0] if args else kwargs.get("input_ids")
    single = bool(kwargs.get("use_cache")) and ids is not None and ids.dim() == 2 and ids.shape[1] == 1
    inside = CORRECTING.set(True)
    offset = _offset.set(_cache_length(args, kwargs) if single else 0)
    try:
        return wrapped(*args, **kwargs)
    finally:
        _offset.reset(offset)
        CORRECTING.reset(inside)


def _embedding(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    length = _offset.get()
    if not length or len(args) != 1 or kwargs:
        return wrapped(*args, **kwargs)
    _offset.set(0)  # once: the decoder's one positional embedding of the step
    import torch.nn as nn

    (ids,) = args
    max_pos = instance.padding_idx + 1 + length + ids.shape[1]
    if max_pos > instance.weight.size(0):
        instance.make_weight(max_pos, instance.embedding_dim, instance.padding_idx)
    positions = instance.make_positions(ids, instance.padding_idx) + length
    return nn.Embedding.forward(instance, positions)
