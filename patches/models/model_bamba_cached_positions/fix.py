"""model-bamba-cached-positions: Bamba numbers the tokens of a forward that continues a cache from 0.

The defect. ``BambaModel.forward``, given no ``position_ids``, takes ``torch.arange(seq_len)``: positions from 0,
whatever the cache already holds. Its siblings (Llama, Jamba, GraniteMoeHybrid, Falcon-H1, Zamba2, NemotronH)
start at ``cache.get_seq_length()``. So every forward that continues a cache without stating its positions puts
the new tokens at positions 0.. in the rotary embedding of the attention layers: a hand-written decoding loop
(``model(next_token, cache=cache)``, one token at a time, every step at position 0), a chunk fed after a cached
system prompt, and from 5.24 (where ``cache_position`` is gone and a caller's ``cache_position`` is ignored) a
``prepare_inputs_for_generation`` call that states the chunk by ``cache_position``. Silently wrong logits (0.78 on
the sweep's tiny Bamba for a 10-token chunk after 3 cached tokens, 0.59 for four 1-token steps); ``generate()``
is right, because it passes ``position_ids``. The line is the same from 5.5 (when ``cache_position`` went from
this forward) to 5.25 at least; before 5.13 the Mamba-2 mixer beside it forgets its state on such a chunk too
(``model-bamba-chunk-state``), and both corrections are needed for a right answer there. No upstream issue found.

Detection. The sweep's tiny Bamba (loud weights): a 3-token prefix cached, then a 10-token chunk and, separately,
four 1-token steps, each fed with the cache and no positions, against a no-cache forward of the whole sequence.

Correction. Where the caller gave no ``position_ids`` and passes a cache that already holds tokens, the forward
is given ``arange(past, past + seq_len)`` with ``past = cache.get_seq_length()``: what upstream's siblings
compute, read through the cache's API. A call with positions, without a cache, or on an empty cache is passed
through untouched (bitwise upstream).
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments, cache_argument, recorder, signature

TARGET = "transformers.models.bamba.modeling_bamba:BambaModel.forward"
# The keywords the cache arrives under: ``cache`` from 5.24; ``past_key_values`` before (and, deprecated, after).
CACHE_KEYWORDS = ("cache", "past_key_values", "cache_params")

_record = recorder(__name__)


def _parameters(func: Any) -> Any:
    
    return signature(func).parameters


def install(patcher: Any) -> None:
    patcher.require(TARGET, "position_ids")
    patcher.wrap(TARGET, _positions_after_the_cache)


def _positions_after_the_cache(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    bound = bound_arguments(wrapped, args, kwargs)  # keyword extras (a deprecated past_key_values) flattened
    if bound.get("position_ids") is not None:
        return wrapped(*args, **kwargs)  # the caller numbered the tokens
    if bound.get("cache_position") is not None and "cache_position" in _parameters(wrapped):
        return wrapped(*args, **kwargs)  # a forward that numbers them by the caller's cache_position (not 5.5 on,
        # where a cache_position the caller passes lands in **kwargs and the forward ignores it)
    cache = cache_argument(bound, CACHE_KEYWORDS)
    tokens = bound.get("inputs_embeds") if bound.get("inputs_embeds") is not None else bound.get("input_ids")
    if cache is None or tokens is None or not hasattr(cache, "get_seq_length"):
        return wrapped(*args, **kwargs)
    past = int(cache.get_seq_length())
    if past == 0:
        return wrapped(*args, **kwargs)  # a prefill: arange(seq_len) is right
    import torch

    positions = torch.arange(past, past + tokens.shape[1], device=tokens.device).unsqueeze(0)
    if _record.on:
        _record.changed("positions %d..%d after a cache of %d", past, past + tokens.shape[1] - 1, past)
    names = list(bound)
    if "position_ids" in names and names.index("position_ids") < len(args):
        args = (*args[:names.index("position_ids")], positions, *args[names.index("position_ids") + 1:])
        return wrapped(*args, **kwargs)
    return wrapped(*args, **dict(kwargs, position_ids=positions))
