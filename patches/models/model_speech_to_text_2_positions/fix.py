"""model-speech-to-text-2-positions: Speech2Text2 counts a left-padded row's pads in its positions once cached.

The defect. Speech2Text2's decoder places tokens with fairseq's ``make_positions``: a token's position is
``padding_idx`` + (the number of non-pad ids before it and itself) + ``past_key_values_length``. Within one forward
the pads are skipped (they are ``padding_idx`` ids), so a left-padded prompt is placed as if unpadded. But once
cached, the offset is the cache length, which counts the pads: every generated token of a left-padded row is put
that many positions too far, and a batched generate() is silently wrong from the first generated token on (0.30 on
the tiny model; each row alone is right). The model is deprecated and keeps that code until it can no longer be
built.

Detection. A tiny Speech2Text2 causal LM, rows of 7 and 4 tokens left-padded with the pad id, 6 greedy tokens:
every row and step against a no-cache forward of the unpadded row.

Correction. ``Speech2Text2Decoder.forward`` is wrapped to note its 2D ``attention_mask`` for the duration of the call
(a context variable: this thread or task only), and the positional embedding's forward, given a cache offset and a
mask that covers the cache and the new ids, takes as offset each row's number of attended cached tokens instead of
the cache length -- the same formula, with the pads left out as they are within one forward. Without a cache, or
with no pad in the cached part, the offset is the cache length and the output upstream's, bitwise.
"""

from __future__ import annotations

import contextvars
from typing import Any

from hf_genfix.toolkit import bound_arguments

MODULE = "transformers.models.deprecated.speech_to_text_2.modeling_speech_to_text_2"
DECODER = f"{MODULE}:Speech2Text2Decoder.forward"
POSITIONS = f"{MODULE}:Speech2Text2SinusoidalPositionalEmbedding.forward"

_mask: contextvars.ContextVar = contextvars.ContextVar("hf_genfix_speech_to_text_2_mask", default=None)


def install(patcher: Any) -> None:
    patcher.require(DECODER, "attention_mask", "past_key_values")
    patcher.require(POSITIONS, "input_ids", "past_key_values_length")
    patcher.wrap(DECODER, decoder_forward)
    patcher.wrap(POSITIONS, positions_without_pads)


def decoder_forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    try:
        mask = bound_arguments(wrapped, args, kwargs).get("attention_mask")
    except TypeError:
        mask = None
    token = _mask.set(mask if mask is not None and mask.dim() == 2 else None)
    try:
        return wrapped(*args, **kwargs)
    finally:
        _mask.reset(token)


def positions_without_pads(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    call = bound_arguments(wrapped, args, kwargs)
    ids, past, mask = call.get("input_ids"), call.get("past_key_values_length", 0), _mask.get()
    if mask is None or ids is None or not past or mask.shape != (ids.shape[0], past + ids.shape[1]):
        return wrapped(*args, **kwargs)
    import torch

    cached = mask[:, :past].to(torch.long).sum(-1, keepdim=True)  # attended cached tokens, per row
    if bool((cached == past).all()):
        return wrapped(*args, **kwargs)  # no pad in the cache: upstream's offset is right
    # upstream's create_position_ids_from_input_ids with a per-row offset
    real = ids.ne(instance.padding_idx).int()
    positions = ((torch.cumsum(real, dim=1).type_as(real) + cached.to(real.device)) * real).long() + instance.padding_idx
    needed = int(positions.max()) + 1
    if needed > instance.weights.size(0):
        return wrapped(*args, **kwargs)  # upstream grows its table on its own terms; not this defect's business
    return instance.weights.index_select(0, positions.view(-1)).view(ids.shape[0], ids.shape[1], -1).detach()
