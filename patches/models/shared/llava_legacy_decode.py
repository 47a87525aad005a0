"""model-llava-legacy-decode-mask / model-llava-next-legacy-decode-mask / model-vipllava-legacy-decode-mask: on
4.46.1-4.47 every cached decoding step of LLaVA, LLaVA-NeXT and VipLLaVA takes the legacy image path, which rebuilds
the attention mask from the cache and drops a left-padded row's padding (each fix's docstring has its measurements).

The defect they share. Each model's ``forward`` decides "legacy processing" (the image token expanded inside the
model, for processors that did not expand it) by ``(input_ids == image_token_index).sum(1).max() < image_seq_length``
(or a one-token step with pixels). A decoding step's ``input_ids`` is one text token, so the count is 0 and every
decoding step takes the legacy path, even for a prompt whose image tokens the processor expanded: for a one-token step
the model then rebuilds the attention mask from the cache (ones, except where the first layer's cached keys are
exactly zero) and the positions from that mask's sum. A left-padded row's pads have keys that are not zero, so from
the second generated token on the padded row attends to its padding at positions counted as if it had none. 4.46.0
nested the branch under ``pixel_values is not None`` (which generate() passes at a decoding step only for a legacy
prompt), 4.46.1 moved it to the top level of the forward, 4.48.0 removed the legacy path (wheels read for the three
models; LLaVA-NeXT-Video and Video-LLaVA require pixels for the legacy path on every release: not affected).

Correction. The model's ``forward`` is wrapped: for a decoding step of the non-legacy kind -- one token of
``input_ids``, no ``inputs_embeds``, no ``pixel_values``, a cache whose length plus the step's token is the attention
mask's width (the mask covers the cache: the prompt was not expanded inside the model) -- the step's token is
embedded by the model's own embedding and passed as ``inputs_embeds``, so that the forward takes its current path
with the mask and positions generate() gave (the legacy check runs only for ``input_ids``). A step after a legacy
prefill (the cache longer than the mask: the image expanded inside the model) still gets the legacy path it needs,
and every other call is upstream's.

One patch per model, not one patch with three targets: the registry installs a patch once every module it names is
imported, and a program that uses LLaVA-NeXT never imports LLaVA's module (a three-target first cut waited there,
armed, for ever: caught by the sweep's worker processes, which import one architecture's module at a time).
"""

from __future__ import annotations

from typing import Any

from hf_genfix.helpers.decode import cache_length
from hf_genfix.toolkit import bound_arguments, hidden_from_warnings, recorder

PARAMS = ("input_ids", "pixel_values", "attention_mask", "past_key_values", "inputs_embeds")


def install(patcher: Any, forward: str, patch_module: str) -> None:
    """Wrap ``forward`` (``module:Class.forward``); ``patch_module`` is the fix's ``__name__`` (its recorder)."""
    patcher.require(forward, *PARAMS)
    record = recorder(patch_module)
    patcher.wrap(forward, lambda wrapped, instance, args, kwargs: _forward(record, wrapped, instance, args, kwargs))


@hidden_from_warnings
def _forward(record: Any, wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    bound = bound_arguments(wrapped, args, kwargs)
    ids, mask = bound.get("input_ids"), bound.get("attention_mask")
    if (not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.shape[1] != 1
            or bound.get("inputs_embeds") is not None or bound.get("pixel_values") is not None
            or not isinstance(mask, torch.Tensor) or mask.dim() != 2):
        return record.through(wrapped, args, kwargs)
    try:
        past = cache_length(bound.get("past_key_values"))
    except (TypeError, IndexError, AttributeError):  # a cache it cannot read: upstream's call
        past = 0
    if not past or past + 1 != mask.shape[1]:
        return record.through(wrapped, args, kwargs)
    if record.on:
        record.changed("%s decoding step: the attention mask generate() gave (%d padded rows)",
                       type(instance).__name__, int((mask == 0).any(dim=1).sum()))
    call = dict(bound)
    call["inputs_embeds"] = instance.get_input_embeddings()(ids)
    call["input_ids"] = None
    return wrapped(**call)
