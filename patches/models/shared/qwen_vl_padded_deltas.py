"""model-qwen2-vl-padded-deltas / model-qwen2-5-vl-padded-deltas: on 4.54-4.56 and 5.2, Qwen2-VL's and Qwen2.5-VL's
M-RoPE offsets of a left-padded row count its padding, while the positions they are added to do not: every generated
token of a padded row is placed early (4.54-4.56: every decoding step of a plain generate(); 5.2: a turn that
continues the batch's cache), silently wrong.

The defect. A Qwen-VL image takes more tokens than it advances the text positions, so the position of a text
token after it is its index among the row's real tokens plus a per-row offset, ``rope_deltas``, which
``get_rope_index`` returns with the positions of the prompt. On 5.2 it computes the offset as the row's largest
position + 1 minus the *padded* width of the batch (``len(total_input_ids[i])``); Qwen2-VL also clamps it at 0.
The positions of a turn that continues a cache (``_prepare_position_ids_for_generation``, and the model's forward
without position ids) are the mask's running count of real tokens plus that offset: a row with ``p`` pads is
``p`` positions early (Qwen2-VL: also wherever the clamp cut a negative offset). On 5.2 the decoding steps of one
``generate()`` are right (they advance the prompt's own positions), so only a continued cache shows it: a second
turn from ``out.past_key_values``, a deep-copied prompt cache. 5.3.0 computes the offset over the row's real
tokens (``len(current_input_ids)``), unclamped. 4.54-4.56 had the same offsets and the same mask-counted positions
at *every* decoding step (``prepare_inputs_for_generation``: ``model_inputs["position_ids"] + rope_deltas``, the
positions generate() counts from the attention mask): from a left-padded batch's first generated token on, a
padded row is ``p`` positions early (the sweep's image-loud-cached-padded: 2.35 Qwen2-VL, 8.06 Qwen2.5-VL on
4.56.0). 4.53 and 4.57-5.1 add the offset to ``cache_position``, which counts the padding too, and are right; there
the model's forward without position ids continues a cache the same way, and on 4.54-4.56 that path raises
upstream (an in-place add on an expanded tensor), so no call that was right reads the corrected offsets.
Measured on 5.2 on the sweep's tiny models (loud weights): a left-padded batch of two prompts with images of 4 and 8
soft tokens, turn 2 straight after turn 1: the padded row is 1 position early, 4.07 (Qwen2-VL) and 6.56
(Qwen2.5-VL) off at the new turn's first token.

Detection. ``probe_*``: that batch, turn 1 (3 tokens), then turn 2 from ``out.past_key_values`` with 4 new text
tokens and no other call between (the offsets the model keeps are the batch's own, which
``model-qwen2*-vl-rope-deltas`` is about); every step of both turns against the no-cache forward of each row's
whole conversation with its image.

Correction. ``get_rope_index`` of the inner model is wrapped: the positions are upstream's, and each row's offset
is recomputed from them as 5.3 does, over the row's real tokens (those the attention mask keeps): its largest
position + 1 minus their count, unclamped. Where no row is padded and no offset was clamped, that is upstream's
value, so unpadded calls are bitwise as they were.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments, hidden_from_warnings, recorder

MODELS = {
    "qwen2_vl": "transformers.models.qwen2_vl.modeling_qwen2_vl:Qwen2VLModel.get_rope_index",
    "qwen2_5_vl": "transformers.models.qwen2_5_vl.modeling_qwen2_5_vl:Qwen2_5_VLModel.get_rope_index",
}


def _install(patcher: Any, arch: str) -> None:
    patcher.require(MODELS[arch], "input_ids", "attention_mask")
    record = recorder(patcher.patch_id)  # the patch installing this: one per model

    def get_rope_index(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        return _real_deltas(wrapped, args, kwargs, record)

    patcher.wrap(MODELS[arch], get_rope_index)


def install_qwen2_vl(patcher: Any) -> None:
    _install(patcher, "qwen2_vl")


def install_qwen2_5_vl(patcher: Any) -> None:
    _install(patcher, "qwen2_5_vl")


@hidden_from_warnings
def _real_deltas(wrapped: Any, args: tuple, kwargs: dict, record: Any) -> Any:
    import torch

    result = wrapped(*args, **kwargs)  # each ``return result`` below: upstream's answer as it is (unchanged)
    try:
        positions, deltas = result
    except (TypeError, ValueError):
        record.unchanged()
        return result
    bound = bound_arguments(wrapped, args, kwargs)
    ids, mask = bound.get("input_ids"), bound.get("attention_mask")
    if not isinstance(ids, torch.Tensor) or not isinstance(positions, torch.Tensor) or positions.dim() != 3 \
            or not isinstance(deltas, torch.Tensor) or deltas.numel() != ids.shape[0]:
        record.unchanged()
        return result
    real = torch.ones_like(ids, dtype=torch.bool) if mask is None else (mask == 1).to(positions.device)
    if mask is not None and mask.dim() != 2:
        record.unchanged()
        return result
    # Each row's largest position over its real tokens, + 1, minus their count (5.3.0's definition).
    top = positions.masked_fill(~real.unsqueeze(0), torch.iinfo(positions.dtype).min).amax(dim=(0, 2))
    fixed = (top + 1 - real.sum(dim=1)).to(deltas.dtype).reshape(deltas.shape).to(deltas.device)
    if torch.equal(fixed, deltas):
        record.unchanged()
        return result
    if record.on:
        record.changed("M-RoPE offsets over each row's real tokens: %s instead of %s",
                        fixed.flatten().tolist(), deltas.flatten().tolist())
    return positions, fixed
