"""sliding-window-image-static-gemma3 / -gemma4: 5.13-5.16, Gemma-3/4 with images and a ``StaticCache`` larger
than the window raise ``IndexError`` (a device-side assert on CUDA). And sliding-window-image-index-gemma3: the
same symptom on 4.53 from another cause.

The defect. 5.13 fixed the image mask (see sliding_window_image_mask.py) with a new
``create_masks_for_vision_model`` that builds the sliding layers' mask with ``create_causal_mask(...,
and_mask_function=sliding_window_overlay)``. ``create_causal_mask`` sizes its mask for the first *full-attention*
layer: with a dynamic cache in the prefill both layer kinds hold the same keys, so nothing shows, but a static
cache's sliding layers hold only the window while its full layers hold ``max_cache_len`` slots, and the blockwise
overlay then indexes past the image ids: ``IndexError: index 24 is out of bounds for dimension 1 with size 24`` for
a 24-token prompt in a 40-slot cache (5.13.0 and 5.16.0 measured, Gemma-3 and Gemma-4,
generate(cache_implementation="static") and a plain forward). Fixed upstream in 5.17.0 (PR 48482) by sizing the
sliding mask against a sliding layer.

On 4.53 (only) Gemma-3's ``token_type_ids_mask_function`` reads ``token_type_ids[batch, kv_idx]`` at every key
position; a StaticCache's masks span ``max_cache_len`` keys, so any StaticCache wider than the prompt raises
``IndexError: index 25 is out of bounds for dimension 1 with size 25``. 4.54 clamps the index.

Detection. ``probe_gemma3`` / ``probe_gemma4`` (both defects): a tiny multimodal model, a prompt with a 16-token
image block (window 8), one forward through a 40-slot ``StaticCache``; its logits against the no-cache forward given
the policy's masks.

Correction. ``create_masks_for_vision_model`` of the model's module is wrapped with the same two mask calls made
by the right builders: the full layers' mask as before (``create_causal_mask`` with the block ids on Gemma-3,
without on Gemma-4), the sliding layers' mask from ``create_sliding_window_causal_mask`` -- which sizes it for a
sliding layer -- with the policy's block overlay ORed in and its window edge ANDed over it: the same
AND(window, OR(causal, block)) that 5.13 meant and 5.17 builds. The original is not called (its sliding mask is
the fault, and it is those two calls and nothing else). On 4.53, ``token_type_ids_mask_function`` returns the
policy's block overlay instead: the same blocks (one per run of image tokens, as 4.54+ define them; 4.53 merged
two images closer than an image's length) read with clamped indices.
"""

from __future__ import annotations

import sys
from typing import Any

from hf_genfix._patches.sliding_window.shared.image_mask import FULL, GEMMA3, GEMMA4, SLIDING, bound_arguments


def install_gemma3(patcher: Any) -> None:
    _install(patcher, GEMMA3, full_sees_blocks=True)


def install_gemma4(patcher: Any) -> None:
    _install(patcher, GEMMA4, full_sees_blocks=False)


def install_gemma3_token_types(patcher: Any) -> None:
    target = f"{GEMMA3}:token_type_ids_mask_function"
    patcher.require(target, "token_type_ids")
    patcher.wrap(target, _safe_image_overlay)


def _safe_image_overlay(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    from hf_genfix.helpers.sliding_window import SlidingWindowPolicy

    token_type_ids = bound_arguments(wrapped, args, kwargs).get("token_type_ids")
    if token_type_ids is None:
        return wrapped(*args, **kwargs)
    return SlidingWindowPolicy.block_overlay(SlidingWindowPolicy.block_ids(token_type_ids == 1))


def _install(patcher: Any, module: str, full_sees_blocks: bool) -> None:
    target = f"{module}:create_masks_for_vision_model"
    patcher.require(target, "config", "past_key_values", "block_sequence_ids")
    patcher.require(f"{module}:create_causal_mask", "block_sequence_ids")
    patcher.require(f"{module}:create_sliding_window_causal_mask", "or_mask_function", "and_mask_function")
    patcher.wrap(target, _vision_masks(module, full_sees_blocks))


def _vision_masks(module: str, full_sees_blocks: bool) -> Any:
    def create_masks_for_vision_model(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> dict:
        from hf_genfix.helpers.sliding_window import SlidingWindowPolicy

        call = bound_arguments(wrapped, args, kwargs)
        blocks = call.pop("block_sequence_ids")
        owner = sys.modules[module]
        policy = SlidingWindowPolicy.from_config(call["config"])
        full = owner.create_causal_mask(**call, block_sequence_ids=blocks) if full_sees_blocks else \
            owner.create_causal_mask(**call)
        sliding = owner.create_sliding_window_causal_mask(
            **call, or_mask_function=policy.block_overlay(blocks), and_mask_function=policy.window_overlay()
        )
        return {FULL: full, SLIDING: sliding}

    return create_masks_for_vision_model
