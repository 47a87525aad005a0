"""model-qwen2-vl-cache-position / model-qwen2-5-vl-cache-position: a forward that continues a cache without
``cache_position`` places the new tokens of Qwen2-VL and Qwen2.5-VL at position 0 (silently wrong, or a shape
error).

The defect. These models keep M-RoPE positions: the text positions of a row are its index plus an offset
(``rope_deltas``) that the model computes when it reads a prompt. A later call that continues a cache adds the
offset to ``cache_position[0]``. When a caller gives no ``cache_position`` (a hand-written decoding loop, a
speculative-decoding or serving framework that calls ``model(input_ids=chunk, past_key_values=cache)``, as it
may on every other model), the Qwen-VL forward takes 0 for it:

- 4.52-4.57 ``Qwen2VLModel.forward``: the offset is ``0`` (Qwen2-VL 4.52/4.53, Qwen2.5-VL) or a zeros tensor of
  the chunk's shape (Qwen2-VL on 4.57: a shape error for a chunk of several tokens);
- the new tokens take positions 0, 1, ... as if the prompt had never been read.

Their text model, like every other model, derives the cache positions from the cache's length
(``past_key_values.get_seq_length()``), so only the M-RoPE positions are off. A sweep scenario found it:
``image-chunk-after-cache`` (one forward over the image prompt with a cache, then a forward of 5 more text
tokens after it), wrong by 6.05 (Qwen2.5-VL) and 6.56 (Qwen2-VL) on 4.53.3, with loud tiny models.

Detection. ``probe()``: that scenario on the sweep's tiny model with loud weights (std 0.3). Every new token is
checked against the no-cache forward of the whole row with its image.

Correction. When the caller gives neither ``cache_position`` nor ``position_ids`` and the cache holds ``n`` > 0
positions, the wrapper gives ``cache_position = arange(n, n + new tokens)``. These are the cache positions the text
model derives itself, so the model then adds its offsets to the right start. Every call that names its positions
(``generate()`` always does), and every call without a filled cache, is passed through untouched.
"""

from __future__ import annotations

import inspect
from typing import Any

from hf_genfix.toolkit import hidden_from_warnings, recorder

# model type -> (module, the class whose forward computes the M-RoPE positions on 4.52+, the generation class)
MODELS = {
    "qwen2_vl": ("transformers.models.qwen2_vl.modeling_qwen2_vl", "Qwen2VLModel",
                 "Qwen2VLForConditionalGeneration"),
    "qwen2_5_vl": ("transformers.models.qwen2_5_vl.modeling_qwen2_5_vl", "Qwen2_5_VLModel",
                   "Qwen2_5_VLForConditionalGeneration"),
}


def install_for(patcher: Any, arch: str) -> None:
    module, model, generation = MODELS[arch]
    for cls in (model, generation):
        patcher.require(f"{module}:{cls}.forward", "input_ids", "past_key_values", "cache_position")
    # Before 4.52 the positions are computed in the generation class and the base class is the text model: Drift.
    patcher.require(f"{module}:{model}.get_rope_index")
    record = recorder(patcher.patch_id)

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        return _forward(wrapped, args, kwargs, record)

    # Both: a caller may call the base model by hand; through the generation class, its wrapper gives the cache
    # positions and the inner one then sees them and passes the call through.
    patcher.wrap(f"{module}:{generation}.forward", wrapper)
    patcher.wrap(f"{module}:{model}.forward", wrapper)


@hidden_from_warnings
def _forward(wrapped: Any, args: tuple, kwargs: dict, record: Any) -> Any:
    import torch

    from hf_genfix.helpers.decode import cache_length

    # The hot path first: generate() names its positions by keyword at every step; no binding needed for it.
    if kwargs.get("cache_position") is not None or kwargs.get("position_ids") is not None:
        return record.through(wrapped, args, kwargs)
    try:
        bound = inspect.signature(wrapped).bind(*args, **kwargs)
    except TypeError:
        return record.through(wrapped, args, kwargs)
    call = bound.arguments
    if call.get("cache_position") is not None or call.get("position_ids") is not None:
        return record.through(wrapped, args, kwargs)
    try:
        past = cache_length(call.get("past_key_values"))
    except TypeError:
        return record.through(wrapped, args, kwargs)  # a cache layout we cannot read: upstream's behaviour
    new = call.get("input_ids")
    if new is None:
        new = call.get("inputs_embeds")
    if past <= 0 or new is None or new.dim() < 2:
        return record.through(wrapped, args, kwargs)
    call["cache_position"] = torch.arange(past, past + new.shape[1], device=new.device)
    if record.on:
        record.changed("cache_position %d..%d given to a forward that continues a cache", past,
                       past + new.shape[1] - 1)
    return wrapped(*bound.args, **bound.kwargs)
