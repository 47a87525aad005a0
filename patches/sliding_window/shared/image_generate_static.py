"""sliding-window-image-generate-static-gemma4 / -gemma3: ``generate()`` with an image prompt and a static cache drops
the image block's bidirectional mask (Gemma-4 on 5.5 - 5.22, Gemma-3 on 4.53): silently wrong logits and tokens.

The defect. For a compileable cache (``cache_implementation="static"``, a caller's ``StaticCache``) the generic
``prepare_inputs_for_generation`` builds the 4-D masks itself, through the model's ``create_masks_for_generate``,
handing it the token types it has already moved into the model inputs. Up to 5.22 only ``token_type_ids`` is moved
there before the mask is built; ``mm_token_type_ids`` -- what Gemma-4 marks its image tokens with -- is forwarded
afterwards. So Gemma-4's ``create_masks_for_generate`` gets ``mm_token_type_ids=None`` and builds purely causal
masks: the image tokens of the prompt no longer see their block both ways on the sliding layers, and the logits
equal a causal-only forward (0.036 - 0.043 off at the first new token on the tiny model, 1.3 on a larger one). The
dynamic cache builds its mask inside the model and is right. Measured wrong on 5.6.0 - 5.22.2 (5.6, 5.9-5.14, 5.16-5.20
and 5.22 run); on 5.5.0 the same call first raises ``IndexError: list index out of range`` (the static cache
has no layers when ``num_kv_shared_layers=0``, fixed here by sliding-window-kv-shared-zero, after which this defect
shows). 5.23.0 moves ``mm_token_type_ids`` into the model inputs before building the mask.

Gemma-3 on 4.53 (4.53.0 and 4.53.3 measured; 0.016 off) loses its ``token_type_ids`` the same way: the generic
code reads ``getattr(model_input, "token_type_ids", None)`` -- an attribute of the input tensor, always None.
4.54.0 reads the model inputs.

Detection. A tiny Gemma-4 with a one-layer vision tower and ``use_bidirectional_attention="vision"``, a prompt with
a 16-token image block (window 8), greedy ``generate(cache_implementation="static")``: every step's logits against
the no-cache forward given ``SlidingWindowPolicy``'s masks (``oracles.sliding_static``).

Correction. ``Gemma4ForConditionalGeneration.prepare_inputs_for_generation`` (Gemma-3's on 4.53) is wrapped: when
the release built a 4-D mask for a compileable cache and this step's inputs contain image tokens (prefill), the mask
is built again with the call 5.23 (4.54) makes (on the 2-D mask, or None: 5.18+ drops an all-ones mask) -- the
model's own ``create_masks_for_generate`` with the same arguments plus ``mm_token_type_ids`` cut to the step's
tokens. Every mask helper the other Gemma-4 image patches correct (sliding-window-image-mask-gemma4,
sliding-window-image-static-gemma4) is reached through that call, so they stack. Decoding steps (no image token
among the inputs) and dynamic caches are left as they are.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.sliding_window.shared.image_mask import GEMMA3, GEMMA4, bound_arguments
from hf_genfix.toolkit import hidden_from_warnings

PREPARE_GEMMA4 = f"{GEMMA4}:Gemma4ForConditionalGeneration.prepare_inputs_for_generation"
PREPARE_GEMMA3 = f"{GEMMA3}:Gemma3ForConditionalGeneration.prepare_inputs_for_generation"


def install_gemma4(patcher: Any) -> None:
    patcher.require(PREPARE_GEMMA4, "input_ids", "use_cache", "is_first_iteration")
    patcher.wrap(PREPARE_GEMMA4, _prepare_inputs_gemma4)


def install_gemma3(patcher: Any) -> None:
    patcher.require(PREPARE_GEMMA3, "input_ids", "token_type_ids", "cache_position")
    patcher.wrap(PREPARE_GEMMA3, _prepare_inputs_gemma3)


def _prepare_inputs_gemma4(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    def masks(step: dict) -> Any:
        return instance.create_masks_for_generate(
            config=instance.config, inputs_embeds=step["empty"], attention_mask=step["mask"],
            past_key_values=step["cache"], position_ids=step["inputs"].get("position_ids"),
            mm_token_type_ids=step["types"], is_first_iteration=step["call"].get("is_first_iteration"),
        )

    return _with_image_masks(wrapped, instance, args, kwargs, "mm_token_type_ids", masks)


def _prepare_inputs_gemma3(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    def masks(step: dict) -> Any:
        # 4.53's signature: input_embeds (2-D is enough, as upstream passes it), cache_position.
        return instance.create_masks_for_generate(
            config=instance.config, input_embeds=step["empty"].new_empty(step["empty"].shape[:2]),
            attention_mask=step["mask"], cache_position=step["inputs"].get("cache_position"),
            past_key_values=step["cache"], position_ids=step["inputs"].get("position_ids"),
            token_type_ids=step["types"],
        )

    return _with_image_masks(wrapped, instance, args, kwargs, "token_type_ids", masks)


@hidden_from_warnings
def _with_image_masks(wrapped: Any, instance: Any, args: tuple, kwargs: dict, key: str, masks: Any) -> Any:
    """The release's model inputs, with the 4-D masks built again by ``masks(step)`` when the release built them
    for a compileable cache without the image tokens' types (``key``) and this step's inputs hold image tokens."""
    import torch

    inputs = wrapped(*args, **kwargs)
    if not isinstance(inputs, dict):
        return inputs
    call = bound_arguments(wrapped, args, kwargs)
    types, mask, cache = call.get(key), call.get("attention_mask"), inputs.get("past_key_values")
    built = inputs.get("attention_mask")
    if (
        not isinstance(types, torch.Tensor)
        # 5.18+ passes None for an all-ones mask
        or (mask is not None and (not isinstance(mask, torch.Tensor) or mask.dim() != 2))
        or not getattr(cache, "is_compileable", False)
        or built is None
        or (isinstance(built, torch.Tensor) and built.dim() == 2)  # the release did not build one: nothing lost
    ):
        return inputs
    tokens = inputs.get("input_ids") if inputs.get("input_ids") is not None else inputs.get("inputs_embeds")
    if tokens is None:
        return inputs
    batch, length = tokens.shape[:2]
    step_types = types[..., -length:]
    if step_types.shape != (batch, length) or not bool(step_types.any()):
        return inputs
    empty = torch.empty((batch, length, 0), dtype=instance.dtype, device=tokens.device)
    inputs["attention_mask"] = masks(dict(inputs=inputs, call=call, types=step_types, mask=mask, cache=cache,
                                          empty=empty))
    return inputs
