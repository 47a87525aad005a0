"""prepare-inputs-padding-idx-positions: from 5.2, ``generate()`` numbers the positions of RoBERTa-style decoders
from 0, where the model itself numbers them from ``padding_idx + 1``.

The defect and the correction are the family's: ``prepare_inputs/shared/padding_idx_positions.py``. From 5.2 the
positions are made once, before the first step, by ``GenerationMixin._prepare_position_ids_for_generation``
(later steps continue from the last one): a tiny RoBERTa decoder (``is_decoder=True``, weights redrawn at std 0.3)
differs from a forward of the same tokens by 7.33 on 5.2.0, 5.5.2, 5.12.1, 5.16.0 and 5.25.0. Before 5.2 the same
positions are made at every step in ``prepare_inputs_for_generation``: prepare-inputs-padding-idx-positions-steps.

Detection (``probe``): that tiny decoder, a left-padded batch of two prompts, ``generate()`` with a cache; every
step's logits against a no-cache forward of each unpadded row (the model's own numbering).

Correction. ``_prepare_position_ids_for_generation`` is wrapped: for a RoBERTa-style model, the positions it
returns (the mask's count from 0, or an ``arange`` after the cache where there is no mask) are renumbered as the
model numbers them (``renumbered``). Any other model or answer: upstream's as it is.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.prepare_inputs.shared.padding_idx_positions import padding_idx_of, renumbered
from hf_genfix.toolkit import recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

TARGET = "transformers.generation.utils:GenerationMixin._prepare_position_ids_for_generation"


def install(patcher: Any) -> None:
    patcher.require(TARGET, "inputs_tensor", "model_kwargs")
    patcher.wrap(TARGET, _prepare_position_ids)


def _prepare_position_ids(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    if record.on:
        record.seen()
    padding_idx = padding_idx_of(instance)
    if padding_idx is None:
        return record.through(wrapped, args, kwargs)
    positions = wrapped(*args, **kwargs)
    # (inputs_tensor, model_kwargs): the order install() requires
    model_kwargs = args[1] if len(args) > 1 else kwargs.get("model_kwargs")
    mask = model_kwargs.get("attention_mask") if isinstance(model_kwargs, dict) else None
    ours = renumbered(positions, mask, padding_idx)
    if ours is None:
        record.unchanged()  # positions we cannot read as upstream's count: upstream's
        return positions
    if record.on:
        record.changed("%s: positions numbered from padding_idx + 1 = %d, as its own forward numbers them",
                       type(instance).__name__, padding_idx + 1)
    return ours
