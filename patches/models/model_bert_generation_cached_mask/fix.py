"""model-bert-generation-cached-mask: before 4.47 BertGeneration's forward drops the attention mask whenever it uses a
cache, so a decoder's cached ``generate()`` reads its prompt both ways and attends to the pads.

The defect. ``BertGenerationEncoder.forward`` (the body of ``BertGenerationDecoder``) makes its extended attention
mask -- the causal mask of a decoder times the padding mask -- only ``if not use_cache``; otherwise it hands its
layers ``attention_mask=None``. ``use_cache`` defaults to the config's (True) for a decoder, so every cached call
runs without a mask: the prefill of a prompt attends to later tokens (the first generated token is another function
of the prompt than a plain forward gives: 0.53 on the sweep's calibrated tiny decoder, 4.46.3), and every step
attends to the pads of a left-padded row (1.1). ``use_cache=False`` makes the mask and is right. Upstream PR #35043
(4.47.0) makes the mask whatever ``use_cache`` says.

Detection (``probe``). The sweep's ``bert-decoder-cached`` scenario on its tiny BertGeneration decoder: greedy cached
``generate()`` of one row against a no-cache forward of the row.

Correction. The mask is made inline in ``BertGenerationEncoder.forward`` and passed to its ``self.encoder`` (the
module's own ``BertEncoder``) by keyword, so two seams: the forward is wrapped to make, for a call that would drop
it (a decoder, ``use_cache`` true once resolved as the model does, a 2-D or 3-D mask or none), the mask upstream
makes without a cache -- its own ``get_extended_attention_mask`` over the caller's mask, or over ones as long as the
cache and the new tokens, as upstream fills a missing one -- and to hold it in a context variable (per thread and
task) for the length of the call; ``BertEncoder.forward`` is wrapped to take it when its own encoder is called with
``attention_mask=None``. So the layers see what ``use_cache=False`` gives them, and the cache is kept. An encoder
(``is_decoder`` false), a call without a cache, a 4-D mask (upstream would not read it either way) and inputs the
forward refuses are upstream's, as given.
"""

from __future__ import annotations

import contextvars
from typing import Any

from hf_genfix.toolkit import bound_arguments, recorder

FORWARD = "transformers.models.bert_generation.modeling_bert_generation:BertGenerationEncoder.forward"
ENCODER = "transformers.models.bert_generation.modeling_bert_generation:BertEncoder.forward"

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()
# (the encoder module the mask is for, the mask) while a wrapped forward runs; None outside
_pending: contextvars.ContextVar[Any] = contextvars.ContextVar("hf_genfix_bert_generation_mask", default=None)


def install(patcher: Any) -> None:
    patcher.require(FORWARD, "input_ids", "attention_mask", "inputs_embeds", "past_key_values", "use_cache")
    patcher.require(ENCODER, "attention_mask")
    patcher.wrap(FORWARD, _forward)
    patcher.wrap(ENCODER, _encoder)


def _forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    mask = _upstream_would_drop(instance, bound_arguments(wrapped, args, kwargs))
    if mask is None:
        return record.through(wrapped, args, kwargs)
    if record.on:
        record.changed("BertGeneration with a cache: the attention mask upstream drops (%s)", tuple(mask.shape))
    token = _pending.set((getattr(instance, "encoder", None), mask))
    try:
        return wrapped(*args, **kwargs)
    finally:
        _pending.reset(token)


def _encoder(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    pending = _pending.get()
    if pending is None or pending[0] is not instance or len(args) > 1 or kwargs.get("attention_mask") is not None:
        return record.through(wrapped, args, kwargs)
    _pending.set(None)  # once: a nested call is another model's
    return wrapped(*args, **dict(kwargs, attention_mask=pending[1]))


def _upstream_would_drop(model: Any, bound: dict) -> Any:
    """The extended mask upstream makes without a cache, where this call gets none (else None)."""
    import torch

    config = model.config
    if not getattr(config, "is_decoder", False):
        return None  # an encoder: upstream sets use_cache False and makes the mask
    use_cache = bound.get("use_cache")
    if use_cache is None:
        use_cache = getattr(config, "use_cache", False)
    ids, embeds = bound.get("input_ids"), bound.get("inputs_embeds")
    if not use_cache or (ids is None) == (embeds is None):
        return None  # no cache: upstream's mask; both or neither: upstream raises
    shape = tuple(ids.shape) if ids is not None else tuple(embeds.shape[:-1])
    device = ids.device if ids is not None else embeds.device
    mask = bound.get("attention_mask")
    if mask is None:
        past = bound.get("past_key_values")
        try:  # as upstream: a legacy tuple's (or a cache's) first layer's keys
            past_length = int(past[0][0].shape[2]) if past is not None else 0
        except Exception:  # noqa: BLE001 - a cache this release's forward cannot read either: leave it upstream's
            return None
        mask = torch.ones((shape[0], shape[1] + past_length), device=device)
    elif not isinstance(mask, torch.Tensor) or mask.dim() not in (2, 3):
        return None
    return model.get_extended_attention_mask(mask, shape)
