"""model-qwen2-vl-continuation-deltas: Qwen2-VL on 4.46 numbers the tokens of a generate() call that continues a
cache (a second turn from ``out.past_key_values``, a deep-copied prompt cache) from 0 (silently wrong from the first
new token).

The defect. A Qwen2-VL image of h x w patches takes h*w/4 tokens but advances the text positions by max(h, w)/2
only, so a text token's M-RoPE position is its index plus a per-row offset (``rope_deltas``). On 4.46
``prepare_inputs_for_generation`` computes the positions and the offsets with ``get_rope_index`` when it reads a
prompt from position 0, and after that reads the offsets from ``kwargs["rope_deltas"]``, which generate() carries
from one step to the next of the same call (``_update_model_kwargs_for_generation``). A new ``generate()`` that
continues a cache starts with none: ``delta = 0``, and its tokens get positions 0, 1, 2, ... instead of the cache
length plus the offset. Measured on the sweep's tiny Qwen2-VL with loud weights, 4.46.3: a second turn of a
left-padded batch 0.981 at its first token; with videos 2.73. 4.47.0 keeps the offsets on the model instead
(model-qwen2-vl-rope-deltas-steps then).

Detection (``probe``). The sweep's ``image-second-turn-text-padded`` scenario on its tiny Qwen2-VL (the second
turn without the pixels: the image is in the cache).

Correction. ``forward`` is wrapped to note the offsets its answer holds on the cache it returns: on the cache object
and on its first layer's key tensor (attributes; 4.46's ``generate()`` hands the caller a legacy tuple of those
tensors and makes a new cache of the same tensors from it in the next call, and a ``copy.deepcopy`` copies a
tensor's attributes), as model-qwen2-vl-rope-deltas notes them on later releases; those calls are upstream's.
``prepare_inputs_for_generation`` is wrapped: a call that continues a non-empty cache
(``cache_position[0] > 0``) with an attention mask, no ``position_ids`` and no offsets of its own gets the cache's
noted offsets (for as many rows), which upstream then adds as it adds its own. A cache that carries no note (filled
before hf_genfix was imported, or by other code) and every other call are upstream's, so the steps of one
``generate()`` (which carry their offsets) are bitwise as they were.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.qwen2_vl_rope_deltas import NOTE
from hf_genfix.toolkit import bound_arguments, recorder

MODULE = "transformers.models.qwen2_vl.modeling_qwen2_vl"
PREPARE = f"{MODULE}:Qwen2VLForConditionalGeneration.prepare_inputs_for_generation"
FORWARD = f"{MODULE}:Qwen2VLForConditionalGeneration.forward"

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()


def install(patcher: Any) -> None:
    patcher.require(PREPARE, "input_ids", "past_key_values", "attention_mask", "cache_position", "position_ids")
    patcher.require(FORWARD, "past_key_values", "rope_deltas")
    patcher.wrap(PREPARE, _prepare)
    patcher.wrap(FORWARD, _forward)


def _forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    record.unchanged()  # the caller's call; the notes left on its cache afterwards are ours alone
    out = wrapped(*args, **kwargs)
    deltas, cache = getattr(out, "rope_deltas", None), getattr(out, "past_key_values", None)
    if deltas is not None and cache is not None:
        for holder in (cache, _first_keys(cache)):
            try:
                setattr(holder, NOTE, deltas)
            except (AttributeError, TypeError):  # a tuple, or no tensor: nothing to carry the note there
                pass
    return out


def _prepare(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    bound = bound_arguments(wrapped, args, kwargs)
    noted = _noted_for(bound, bound.get("past_key_values"))
    if noted is None:
        return record.through(wrapped, args, kwargs)
    if record.on:
        record.changed("M-RoPE offsets of the prompt the cache holds given to a call that continues it")
    return wrapped(*args, **dict(kwargs, rope_deltas=noted))


def _first_keys(cache: Any) -> Any:
    """The first layer's key tensor of a cache or a legacy tuple (None when there is none)."""
    try:
        keys = cache[0][0]
    except Exception:  # noqa: BLE001 - a cache that cannot be read so: no note there
        return None
    return keys if hasattr(keys, "shape") else None


def _noted_for(bound: dict, cache: Any) -> Any:
    """The offsets noted on ``cache`` where this call continues it and has none of its own (else None)."""
    import torch

    position, ids = bound.get("cache_position"), bound.get("input_ids")
    if (cache is None or bound.get("rope_deltas") is not None or bound.get("position_ids") is not None
            or bound.get("attention_mask") is None or not isinstance(position, torch.Tensor) or position.numel() == 0
            or int(position[0]) == 0 or not isinstance(ids, torch.Tensor)):
        return None
    noted = getattr(cache, NOTE, None)
    if noted is None:
        noted = getattr(_first_keys(cache), NOTE, None)
    if not isinstance(noted, torch.Tensor) or noted.shape[0] != ids.shape[0]:
        return None
    return noted
