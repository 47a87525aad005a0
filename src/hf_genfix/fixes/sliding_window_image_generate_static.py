"""sliding-window-image-generate-static-gemma4: Gemma-4 ``generate()`` with an image prompt and a static cache drops
the image block's bidirectional mask (5.5 - 5.22): silently wrong logits and tokens.

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

Detection. A tiny Gemma-4 with a one-layer vision tower and ``use_bidirectional_attention="vision"``, a prompt with
a 16-token image block (window 8), greedy ``generate(cache_implementation="static")``: every step's logits against
the no-cache forward given ``SlidingWindowPolicy``'s masks (``oracles.sliding_static``).

Correction. ``Gemma4ForConditionalGeneration.prepare_inputs_for_generation`` is wrapped: when the release built a
4-D mask for a compileable cache and this step's inputs contain image tokens (prefill), the mask is built again with
the call 5.23 makes (on the 2-D mask, or None: 5.18+ drops an all-ones mask) -- the model's own
``create_masks_for_generate`` with the same arguments plus ``mm_token_type_ids`` cut to the step's tokens. Every
mask helper the other Gemma-4 image patches correct (sliding-window-image-mask-gemma4,
sliding-window-image-static-gemma4) is reached through that call, so they stack. Decoding steps (no image token
among the inputs) and dynamic caches are left as they are.
"""

from __future__ import annotations

from typing import Any

from .sliding_window_image_mask import GEMMA4, bound_arguments

PREPARE = f"{GEMMA4}:Gemma4ForConditionalGeneration.prepare_inputs_for_generation"


def install_gemma4(patcher: Any) -> None:
    patcher.require(PREPARE, "input_ids", "use_cache", "is_first_iteration")
    patcher.wrap(PREPARE, _prepare_inputs)


def _prepare_inputs(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    inputs = wrapped(*args, **kwargs)
    if not isinstance(inputs, dict):
        return inputs
    call = bound_arguments(wrapped, args, kwargs)
    types, mask, cache = call.get("mm_token_type_ids"), call.get("attention_mask"), inputs.get("past_key_values")
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
    inputs["attention_mask"] = instance.create_masks_for_generate(
        config=instance.config,
        inputs_embeds=torch.empty((batch, length, 0), dtype=instance.dtype, device=tokens.device),
        attention_mask=mask,
        past_key_values=cache,
        position_ids=inputs.get("position_ids"),
        mm_token_type_ids=step_types,
        is_first_iteration=call.get("is_first_iteration"),
    )
    return inputs


def probe_gemma4() -> dict:
    from hf_genfix.oracles import sliding_static as ss

    model = ss.tiny_gemma4_vlm()
    _, inputs = ss.image_prompt(model, [(2, 3)])
    return ss.check_image_generation(model, inputs, "Gemma-4 image prompt, generate() with a static cache",
                                     max_new_tokens=2, cache_implementation="static")
