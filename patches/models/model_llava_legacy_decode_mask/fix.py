"""model-llava-legacy-decode-mask: LLaVA on 4.46.1-4.47 drops a left-padded batch's attention mask at every cached
decoding step (silently wrong from the second generated token on the padded rows).

The defect. ``LlavaForConditionalGeneration.forward`` on 4.46.1-4.47 decides "legacy processing" (the image token
expanded inside the model, for processors that did not expand it) by ``(input_ids == image_token_index).sum(1).max()
< image_seq_length``. A decoding step's ``input_ids`` is one text token, so the count is 0 and every decoding step
takes the legacy path, even for a prompt whose image tokens the processor expanded: there, for a one-token step,
the model rebuilds the attention mask from the cache (ones, except where the first layer's cached keys are exactly
zero) and the positions from that mask's sum. A left-padded row's pads have keys that are not zero, so from the
second generated token on the padded row attends to its padding at positions counted as if it had none. (LLaVA-NeXT,
VipLLaVA and Video-LLaVA guard the same branch with ``pixel_values is not None``, which generate() passes at a
decoding step only for a legacy prompt; so did LLaVA up to 4.46.0, 4.46.1 moved the branch out.) 4.48.0 removed
the legacy path. Measured on the sweep's
calibrated tiny LLaVA, 4.46.3: 4.25 from step 1 (image-loud-cached-padded).

Detection. The sweep's ``image-loud-cached-padded`` scenario on a tiny LLaVA (16 image tokens, expanded in the
prompt as a processor does; loud weights): a left-padded batch of two image prompts, cached greedy generate(),
every row's every step against the no-cache forward of that row alone with its image.

Correction. ``LlavaForConditionalGeneration.forward`` is wrapped: for a decoding step of the non-legacy kind -- one
token of ``input_ids``, no ``inputs_embeds``, no ``pixel_values``, a cache whose length plus the step's token is
the attention mask's width (the mask covers the cache: the prompt was not expanded inside the model) -- the step's
token is embedded by the model's own embedding and passed as ``inputs_embeds``, so that forward takes its current
path with the mask and positions generate() gave. A step after a legacy prefill (the cache longer than the mask:
the image expanded inside the model) still gets the legacy path it needs, and every other call is upstream's.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments, recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

FORWARD = "transformers.models.llava.modeling_llava:LlavaForConditionalGeneration.forward"


def install(patcher: Any) -> None:
    patcher.require(FORWARD, "input_ids", "pixel_values", "attention_mask", "past_key_values", "inputs_embeds")
    patcher.wrap(FORWARD, _forward)


def _cache_length(cache: Any) -> int | None:
    if cache is None:
        return None
    if hasattr(cache, "get_seq_length"):
        return int(cache.get_seq_length())
    try:  # the legacy tuple of (key, value) per layer
        return int(cache[0][0].shape[-2])
    except (TypeError, IndexError, AttributeError):
        return None


def _forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    bound = bound_arguments(wrapped, args, kwargs)
    ids, mask = bound.get("input_ids"), bound.get("attention_mask")
    if (not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.shape[1] != 1
            or bound.get("inputs_embeds") is not None or bound.get("pixel_values") is not None
            or not isinstance(mask, torch.Tensor) or mask.dim() != 2):
        return wrapped(*args, **kwargs)
    past = _cache_length(bound.get("past_key_values"))
    if not past or past + 1 != mask.shape[1]:
        return wrapped(*args, **kwargs)
    if record.on:
        record.changed("LLaVA decoding step: the attention mask generate() gave (%d padded rows)",
                        int((mask == 0).any(dim=1).sum()))
    call = dict(bound)
    call["inputs_embeds"] = instance.get_input_embeddings()(ids)
    call["input_ids"] = None
    return wrapped(**call)
