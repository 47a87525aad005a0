"""sliding-window-image-mask-gemma3 / -gemma4: the bidirectional image-token mask of Gemma-3 (up to 5.12) and
Gemma-4 (5.5-5.12) escapes the sliding window (and on Gemma-4 5.11/5.12 also reaches the full-attention layers).

The defect. Gemma-3 and Gemma-4 let the tokens of one image attend to each other both ways. The releases build
that as ``or_mask_function`` / ``block_sequence_ids`` ORed onto the sliding layers' *sliding causal* mask, so an
image token sees its whole block: when a block is longer than the window (256 image tokens vs a window of 512 is
fine, but 280-token Gemma-4 images in a 512 window with text around them, or any custom window, are not), image
tokens see keys far outside their window. A cache that keeps only the window then disagrees with the prompt's own
forward pass, and the output is not the model's (logit diffs 0.02-0.18 on tiny models, silently). On Gemma-4
5.11/5.12 the block ids also go to the global layers, which Gemma-4 keeps causal. Measured: Gemma-3 4.53.3 ..
5.12.0 (4.53 is the first release with these mask builders; Gemma-3 appeared in 4.50), Gemma-4 5.5.0 .. 5.12.0.
Fixed upstream in 5.13.0 (PR 46850, issue 46711): sliding layers get AND(window, OR(causal, block)); full layers
get OR(causal, block) on Gemma-3 and causal only on Gemma-4.

Detection. ``probe_gemma3`` / ``probe_gemma4``: a tiny multimodal model (one-layer vision tower, window 8) and a
prompt with a 16-token image block; its no-cache forward must equal the forward given the masks written out by
``SlidingWindowPolicy.dense_mask`` (``oracles.sliding_static.image_mask_reference``).

Correction, in the model's own module (so no other model is touched), on the two names through which those
masks are built:
- ``create_sliding_window_causal_mask``: whatever is ORed in (``or_mask_function``, or ``block_sequence_ids``,
  which 5.11+ ORs in last, after every AND) is kept, and the policy's window edge ``k > q - W`` is ANDed over the
  result -- AND(window, OR(sliding causal, overlay)) = AND(window, OR(causal, overlay)), the fixed releases' mask.
  For the text-only bidirectional overlay of Gemma-3 (``|q - k| < W``) this changes nothing.
- ``create_masks_for_generate`` (the path of ``generate()`` with static caches on every release, and of Gemma-3
  5.0-5.5 and Gemma-4 5.11/5.12 forwards): with an image overlay it builds each layer kind's mask itself from
  the module's ``create_causal_mask`` (full layers: with the overlay on Gemma-3, without on Gemma-4) and the
  corrected sliding builder above, instead of handing one overlay to every kind.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from hf_genfix.toolkit import Recorder, bound_arguments, hidden_from_warnings, recorder

GEMMA3 = "transformers.models.gemma3.modeling_gemma3"
GEMMA4 = "transformers.models.gemma4.modeling_gemma4"
SLIDING, FULL = "sliding_attention", "full_attention"
_OVERLAYS = ("or_mask_function", "block_sequence_ids")


def install_gemma3(patcher: Any) -> None:
    _install(patcher, GEMMA3, full_sees_blocks=True)


def install_gemma4(patcher: Any) -> None:
    _install(patcher, GEMMA4, full_sees_blocks=False)


def _install(patcher: Any, module: str, full_sees_blocks: bool) -> None:
    sliding, generate = f"{module}:create_sliding_window_causal_mask", f"{module}:create_masks_for_generate"
    patcher.require(sliding, "config", "or_mask_function", "and_mask_function")
    patcher.require(generate, "config", "or_mask_function")
    patcher.require(f"{module}:create_causal_mask", "config", "or_mask_function")
    record = recorder(patcher.patch_id)  # each wrapper says where it leaves a call as upstream makes it
    patcher.wrap(sliding, lambda wrapped, instance, args, kwargs:
                 windowed_sliding_mask(wrapped, instance, args, kwargs, record))
    patcher.wrap(generate, _per_layer_kind(module, full_sees_blocks, record))


@hidden_from_warnings
def windowed_sliding_mask(wrapped: Any, instance: Any, args: tuple, kwargs: dict,
                          record: Recorder) -> Any:
    """``create_sliding_window_causal_mask`` whose overlays stay inside the window."""
    call = bound_arguments(wrapped, args, kwargs)
    if all(call.get(name) is None for name in _OVERLAYS):
        return record.through(wrapped, args, kwargs)  # no overlay (no image): upstream's mask
    from transformers.masking_utils import and_masks, or_masks

    from hf_genfix.helpers.sliding_window import SlidingWindowPolicy

    policy = SlidingWindowPolicy.from_config(call["config"])
    overlay = call.get("or_mask_function")
    blocks = call.pop("block_sequence_ids", None)
    if blocks is not None:
        # Moved from block_sequence_ids (ORed after every AND) to or_mask_function (ORed before the ANDs).
        overlay = policy.block_overlay(blocks) if overlay is None else or_masks(overlay, policy.block_overlay(blocks))
    call["or_mask_function"] = overlay
    edge, also = policy.window_overlay(), call.get("and_mask_function")
    call["and_mask_function"] = edge if also is None else and_masks(also, edge)
    return wrapped(**call)


def _per_layer_kind(module: str, full_sees_blocks: bool, record: Recorder) -> Any:
    def masks_for_generate(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        call = bound_arguments(wrapped, args, kwargs)
        config = call.get("config")
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        kinds = set(getattr(text, "layer_types", None) or ())
        if all(call.get(name) is None for name in _OVERLAYS) or not kinds or not kinds <= {SLIDING, FULL}:
            return record.through(wrapped, args, kwargs)
        owner = sys.modules[module]
        names = inspect.signature(owner.create_causal_mask).parameters
        # What upstream's create_masks_for_generate hands each builder: its named arguments, the text config.
        mask_kwargs = {k: v for k, v in call.items() if k in names}
        mask_kwargs["config"] = text
        masks = {}
        if SLIDING in kinds:
            masks[SLIDING] = owner.create_sliding_window_causal_mask(**mask_kwargs)
        if FULL in kinds:
            full = mask_kwargs if full_sees_blocks else {k: v for k, v in mask_kwargs.items() if k not in _OVERLAYS}
            masks[FULL] = owner.create_causal_mask(**full)
        return masks if len(masks) > 1 else next(iter(masks.values()))

    return masks_for_generate
