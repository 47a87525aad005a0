"""model-paligemma-static-cache: PaliGemma with ``cache_implementation="static"`` on 4.46-4.57 attends causally
inside its image + prompt prefix, which the model reads bidirectionally (silently wrong from the first token).

The defect. PaliGemma's text model sees the prefix (image tokens and the prompt) bidirectionally and the generated
suffix causally: ``PaliGemmaModel._update_causal_mask`` (4.46-4.51: the ForConditionalGeneration class's own) builds
that mask from the 2-D attention mask, unless it is given a 4-D mask, which it takes as final. For a compileable
(static) cache, the generic ``prepare_inputs_for_generation`` turns the 2-D mask into a purely causal 4-D one before
the model sees it, so the prefix is read causally: every logit differs from the reference from step 0 (4.57.6 and
earlier; 5.0.0 builds the masks itself and passes). A static hybrid (sliding) cache is rebuilt by PaliGemma itself
at the prompt step.

Detection. ``doctor --sweep``'s image-static-cache scenario on a tiny PaliGemma: a left-padded batch of image
prompts, greedy tokens with a static cache, every row and step against a no-cache forward of that row alone with
its image and its prefix mask.

Correction. ``PaliGemmaForConditionalGeneration.prepare_inputs_for_generation`` is wrapped: when upstream hands the
model a 4-D mask it built from the caller's 2-D mask for a plain (non-sliding) static cache, the wrapper replaces
it with the one PaliGemma's own ``_update_causal_mask`` builds from the same 2-D mask, cache and positions (what the
model does for every other cache). Dynamic caches, sliding (hybrid) static caches, a caller's 4-D mask and calls
without a 2-D mask are upstream's.
"""

from __future__ import annotations

from typing import Any

PATCH = "model-paligemma-static-cache"
TARGET = ("transformers.models.paligemma.modeling_paligemma:PaliGemmaForConditionalGeneration."
          "prepare_inputs_for_generation")


def install(patcher: Any) -> None:
    patcher.require(TARGET, "input_ids", "past_key_values", "attention_mask", "token_type_ids", "cache_position")
    patcher.wrap(TARGET, _prepare_inputs)


def _plain_static(cache: Any) -> bool:
    # 4.46-4.48's StaticCache has no is_compileable flag; from 4.49 it must say True
    if cache is None or not getattr(cache, "is_compileable", True):
        return False
    if type(cache).__name__ != "StaticCache":
        return False
    sliding = getattr(cache, "is_sliding", None)
    return not (sliding is not None and any(sliding))


def _prepare_inputs(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    inputs = wrapped(*args, **kwargs)
    mask2d = kwargs.get("attention_mask")
    cache = kwargs.get("past_key_values")
    built = inputs.get("attention_mask") if isinstance(inputs, dict) else None
    if (getattr(mask2d, "dim", lambda: 0)() != 2 or getattr(built, "dim", lambda: 0)() != 4
            or not _plain_static(cache)):
        return inputs
    # 4.52+: PaliGemmaModel builds the mask; 4.46-4.51: the ForConditionalGeneration class itself
    owner = getattr(instance, "model", None)
    if not hasattr(owner, "_update_causal_mask"):
        owner = instance
    if not hasattr(owner, "_update_causal_mask"):
        return inputs
    tensor = inputs.get("inputs_embeds")
    if tensor is None:
        tensor = inputs.get("input_ids")
    inputs = dict(inputs)
    inputs["attention_mask"] = _update_causal_mask(
        owner, instance, mask2d, kwargs.get("token_type_ids"), cache,
        inputs.get("cache_position", kwargs.get("cache_position")), tensor)
    return inputs


def _update_causal_mask(owner: Any, model: Any, mask2d: Any, token_type_ids: Any, cache: Any, cache_position: Any,
                        tensor: Any) -> Any:
    """PaliGemma's own prefix-LM mask builder, called by keyword: its signature changed three times (4.46:
    ``inputs_embeds`` whose dtype sets the fill; 4.47-4.48: ``input_ids``/``inputs_embeds``; 4.49+:
    ``input_tensor``, shapes only)."""
    import inspect

    import torch

    params = inspect.signature(owner._update_causal_mask).parameters
    kw = dict(attention_mask=mask2d, token_type_ids=token_type_ids, past_key_values=cache,
              cache_position=cache_position, is_training=False)
    if "input_tensor" in params:
        kw["input_tensor"] = tensor
    elif "inputs_embeds" in params:
        # only its batch size, length and dtype are read
        kw["inputs_embeds"] = torch.zeros(tensor.shape[0], tensor.shape[1], 1, dtype=model.dtype,
                                          device=tensor.device)
    else:
        raise TypeError(f"model-paligemma-static-cache: unknown _update_causal_mask signature {params}")
    return owner._update_causal_mask(**kw)
