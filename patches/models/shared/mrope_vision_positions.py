"""model-qwen2-vl-vision-positions / model-qwen2-5-vl-vision-positions: on 5.3-5.5, Qwen2-VL and Qwen2.5-VL place the
tokens of a video, and on 5.3-5.5.3 Qwen2.5-VL those of every image, at the wrong rotary positions: silently wrong
from the prompt on.

The defect. 5.3.0 moved the positions of one image or video block into ``get_vision_position_ids(start_position,
grid_thw, temp_merge_size, spatial_merge_size, time_interval)``, one copy per model class. Its body (5.3.0-5.5.4)
builds the temporal row as ``torch.full((tokens,), start_position) * time_interval``: every frame at the same
temporal position, and the block's start multiplied by the interval instead of added to it; and the height row as
``arange(h).repeat_interleave(w * t)``, which is right for one frame only. Measured where it shows:

- Qwen2.5-VL passes ``time_interval = tokens_per_second * second_per_grid_t`` for images too (1 second per
  image: the interval is ``tokens_per_second``, 2 in the released checkpoints' configs): every image token's
  temporal position is ``start * tokens_per_second`` instead of ``start``. The prompt's forward is wrong, and the
  offset the model keeps for the tokens after the prompt (``rope_deltas``, the block's largest position + 1
  minus the row's length) takes the inflated temporal position: a turn that continues the cache places every new
  token several positions late (the sweep's tiny Qwen2.5-VL: 1.27 at the new turn's first token).
- Every model whose video block has more than one temporal patch after merging (Qwen2-VL, Qwen2.5-VL; also
  ERNIE-4.5-VL, not patched here: no tiny model of it is measured): all frames share one temporal position and the
  heights are interleaved across frames. The models that split a video into one-frame blocks (GLM-4V and its
  relatives pass ``temp_merge_size = t``, Qwen3-VL and Qwen3.5 cut ``video_grid_thw`` per frame) and those with
  images only (PaddleOCR-VL, GLM-Image) call it with one frame at interval 1 and are right: not patched.

An image block of one frame with ``time_interval`` 1 (every model's images but Qwen2.5-VL's) is right. 5.6.0
rewrote the body (``arange(t) * time_interval`` repeated per frame, ``+ start_position`` after; heights
``repeat_interleave(w).repeat(t)``), the same in every class.

Detection. ``probe_qwen2_5_vl()`` / ``probe_qwen2_vl()`` (``mrope_vision_positions_probes.py``): the sweep's tiny
Qwen2.5-VL (loud weights) on a prompt with one image and on one with a video of two temporal patches (5.5.4 passes
images an interval of 1 in ``get_rope_index``, which fixed them, and kept this body: its videos stay wrong), and
the tiny Qwen2-VL on a prompt with a video of two temporal patches: the logits of the model's own forward against a forward given the positions of the definition (text
consecutive; a vision block's tokens at ``start + t * interval``, ``start + h``, ``start + w``; the text after it at
``start + max(h, w)``), computed by the probe. The sweep's oracle, a no-cache forward, runs the same positions and
cannot see the prompt's error; it sees the continuations of Qwen2.5-VL's cache (the offsets), and the video
scenarios (``oracles/sweep/video.py``) judge against the same definition.

Correction. The model class's ``get_vision_position_ids`` is wrapped: the block's positions are computed as 5.6.0
computes them from the same arguments. Where they equal upstream's (one frame, interval 1) upstream's tensor is
returned, so those calls are bitwise as they were.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments, hidden_from_warnings, recorder

MODELS = {
    "qwen2_vl": "transformers.models.qwen2_vl.modeling_qwen2_vl:Qwen2VLModel.get_vision_position_ids",
    "qwen2_5_vl": "transformers.models.qwen2_5_vl.modeling_qwen2_5_vl:Qwen2_5_VLModel.get_vision_position_ids",
}


def _install(patcher: Any, arch: str) -> None:
    target = MODELS[arch]
    patcher.require(target, "start_position", "grid_thw", "temp_merge_size", "spatial_merge_size", "time_interval")
    record = recorder(patcher.patch_id)  # the patch installing this: one per model

    def get_vision_position_ids(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        return _definition(wrapped, args, kwargs, record)

    patcher.wrap(target, get_vision_position_ids)


def install_qwen2_vl(patcher: Any) -> None:
    _install(patcher, "qwen2_vl")


def install_qwen2_5_vl(patcher: Any) -> None:
    _install(patcher, "qwen2_5_vl")


@hidden_from_warnings
def _definition(wrapped: Any, args: tuple, kwargs: dict, record: Any) -> Any:
    upstream = wrapped(*args, **kwargs)
    if record.on:
        record.seen()
    bound = bound_arguments(wrapped, args, kwargs)
    fixed = vision_positions(bound["start_position"], bound["grid_thw"], bound.get("temp_merge_size", 1),
                             bound.get("spatial_merge_size", 1), bound.get("time_interval", 1), upstream.device)
    if fixed.shape == upstream.shape and bool((fixed == upstream.to(fixed.dtype)).all()):
        record.unchanged()  # upstream's positions are the definition's: its answer, as it is
        return upstream
    if record.on:
        record.changed("M-RoPE positions of a vision block (grid %s, interval %s): each frame at start + t * interval",
                       [int(n) for n in bound["grid_thw"]], bound.get("time_interval", 1))
    return fixed.to(upstream.dtype)


def vision_positions(start: Any, grid_thw: Any, temp_merge_size: int, spatial_merge_size: int, interval: Any,
                     device: Any) -> Any:
    """5.6.0's positions of one vision block: (temporal, height, width) rows over its t x h x w tokens, frame
    major; temporal ``t * interval``, height ``h``, width ``w``, each plus ``start``."""
    import torch

    t, h, w = (int(grid_thw[0]) // temp_merge_size, int(grid_thw[1]) // spatial_merge_size,
               int(grid_thw[2]) // spatial_merge_size)
    temporal = (torch.arange(t, device=device) * interval).long().repeat_interleave(h * w) + start
    height = torch.arange(h, device=device).repeat_interleave(w).repeat(t) + start
    width = torch.arange(w, device=device).repeat(h * t) + start
    return torch.stack([temporal, height, width], dim=0)
