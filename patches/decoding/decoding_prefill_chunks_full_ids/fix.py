"""decoding-prefill-chunks-full-ids: on 4.54 - 4.57, ``generate(prefill_chunk_size=k)`` on a model whose own
``prepare_inputs_for_generation`` slices the ids by its cache's length (CTRL) is silently wrong from the first
new token (4.54 - 4.56) or crashes (4.57).

The defect. ``GenerationMixin._prefill_chunking`` (4.51 - 4.57) hands ``prepare_inputs_for_generation`` each chunk
alone, with the chunk's ``cache_position``. generate()'s default method slices by ``cache_position`` and feeds the
chunk. A model with its own method written for the other contract of generate() -- given the whole sequence,
it drops the tokens its cache holds (``input_ids[:, cache.get_seq_length():]``, or the last token when the ids are
no longer than the cache) and names no ``cache_position`` -- gets a chunk of ``k`` after ``k`` or more cached
tokens and keeps only its last token. Every chunk after the first loses all but one token: the prompt reaches the
cache with holes, and from the first new token on every logit is wrong (CTRL, a loud tiny model: 0.997). 4.57
crashes on the same cut chunk (the chunk's mask prefix no longer matches the one token fed: a shape error).
Before 4.54 such models get no default cache and the loop refuses them (``Cannot use prefill chunking without a
cache``); 5.0 replaced the loop by ``_prefill``.

Detection. The probe: a loud tiny CTRL (matrices at std 0.3), a 19-token prompt, ``prefill_chunk_size=5``, 4 new
tokens, every step against a no-cache forward of the row.

Correction. The wrapper runs the release's loop (``helpers.decode.prefill_chunks``) with one change where the
model's own ``prepare_inputs_for_generation`` names no ``cache_position``: when it cuts a chunk it is handed alone
(upstream's call, made first), it is handed the prompt up to the chunk's end, as generate() hands it the whole
sequence at every decoding step, so its own slicing leaves exactly the chunk. A chunk it feeds whole is upstream's
call exactly; one it does not feed whole either way raises ``ValueError`` (a contract the patch does not know)
instead of a silently wrong prefill. Everything else keeps upstream's loop (and the wrappers below this one): models using
generate()'s method or naming ``cache_position``, padded batches (padding-prefill-chunks; a model of this kind
takes no position ids from the mask anyway), prompts with ``inputs_embeds`` or an image
(decoding-prefill-chunks-inputs), a caller's own ``position_ids``, and a call without a cache (upstream's error).
"""

from __future__ import annotations

import inspect
from typing import Any

from hf_genfix.helpers.decode import has_image_inputs, prefill_chunks
from hf_genfix.toolkit import bound_arguments, recorder

CHUNKING = "transformers.generation.utils:GenerationMixin._prefill_chunking"
record = recorder(__name__)


def install(patcher: Any) -> None:
    patcher.require(CHUNKING, "input_ids", "generation_config", "**model_kwargs")
    patcher.wrap(CHUNKING, _prefill_chunking)


def slices_by_cache_length(model: Any) -> bool:
    """Whether the model's class overrides ``prepare_inputs_for_generation`` with a method that names no
    ``cache_position`` (it can only slice by the cache's length: the full-ids contract)."""
    from transformers.generation.utils import GenerationMixin

    own = getattr(type(model), "prepare_inputs_for_generation", None)
    if own is None or own is GenerationMixin.prepare_inputs_for_generation:
        return False
    try:
        return "cache_position" not in inspect.signature(own).parameters
    except (TypeError, ValueError):
        return False  # no signature to read: unsure, upstream's loop


def _prefill_chunking(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    if record.on:
        record.seen()
    try:
        call = bound_arguments(wrapped, args, kwargs)
    except TypeError:
        return wrapped(*args, **kwargs)
    ids, config = call.pop("input_ids", None), call.pop("generation_config", None)
    mask = call.get("attention_mask")
    if (
        not isinstance(ids, torch.Tensor)
        or not getattr(config, "prefill_chunk_size", None)
        or "past_key_values" not in call  # upstream's own "without a cache" error
        or call.get("inputs_embeds") is not None
        or has_image_inputs(call)
        or call.get("position_ids") is not None
        or (isinstance(mask, torch.Tensor) and not bool(mask.all()))
        or ids.shape[-1] - 1 <= config.prefill_chunk_size  # one chunk: nothing cached before it
        or not slices_by_cache_length(instance)
    ):
        return wrapped(*args, **kwargs)
    if record.on:
        record.changed("prefill of %d tokens in chunks of %d, each handed to %s with the ids before it",
                       ids.shape[-1] - 1, config.prefill_chunk_size, type(instance).__name__)
    return prefill_chunks(instance, ids, config, call, full_ids=True)
