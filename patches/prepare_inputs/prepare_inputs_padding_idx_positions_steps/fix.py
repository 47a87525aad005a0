"""prepare-inputs-padding-idx-positions-steps: before 5.2, ``generate()`` numbers the positions of RoBERTa-style
decoders from 0 at every step, where the model itself numbers them from ``padding_idx + 1``.

The defect and the correction are the family's: ``prepare_inputs/shared/padding_idx_positions.py``. Before 5.2 the
positions are made at every step by the generic ``GenerationMixin.prepare_inputs_for_generation`` (4.46 - 5.1: the
attention mask's count from 0, 1 on a pad, the last columns for the ids fed after a cache), which RoBERTa-style
models use (no override of their own; XLM-RoBERTa-XL's own override, which passes no positions, is not this hook
and is left as it is). From 5.2 they are made once, elsewhere: prepare-inputs-padding-idx-positions.

Detection (``probe``): a tiny RoBERTa decoder (``is_decoder=True``, weights redrawn at std 0.3), a left-padded
batch of two prompts, ``generate()`` with a cache; every step's logits against a no-cache forward of each unpadded
row (the model's own numbering).

Correction. The generic ``prepare_inputs_for_generation`` is wrapped (outermost on the prepare-inputs chain): for a
RoBERTa-style model called with no ``position_ids`` of the caller's, the ``position_ids`` in the inputs it returns
(upstream's count of the call's 2-D mask, checked) are renumbered as the model numbers them (``renumbered``).
Positions the caller gave, a call without a mask (upstream makes none: the model numbers its own), any other model
or answer: upstream's as they are.
"""

from __future__ import annotations

import inspect
from typing import Any

from hf_genfix._patches.prepare_inputs.shared.padding_idx_positions import padding_idx_of, renumbered
from hf_genfix.toolkit import Drift, recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

TARGET = "transformers.generation.utils:GenerationMixin.prepare_inputs_for_generation"
# The generic method's leading parameters on every release this installs on (4.46 - 5.1); a call's mask is read by
# that order where it comes positionally.
_ORDER = ["input_ids", "past_key_values", "attention_mask"]


def install(patcher: Any) -> None:
    generic = patcher.require(TARGET, *_ORDER)
    if list(inspect.signature(generic).parameters)[1:4] != _ORDER:
        raise Drift(f"{TARGET}: parameters not in the order {_ORDER}")
    patcher.wrap(TARGET, _prepare_inputs)


def _prepare_inputs(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    if record.on:
        record.seen()
    padding_idx = padding_idx_of(instance)
    if padding_idx is None or kwargs.get("position_ids") is not None:
        return record.through(wrapped, args, kwargs)
    inputs = wrapped(*args, **kwargs)
    mask = kwargs["attention_mask"] if "attention_mask" in kwargs else (args[2] if len(args) > 2 else None)
    positions = inputs.get("position_ids") if isinstance(inputs, dict) and mask is not None else None
    ours = renumbered(positions, mask, padding_idx) if positions is not None else None
    if ours is None:
        record.unchanged()  # no positions made, or none we can read as upstream's count: upstream's
        return inputs
    if record.on:
        record.changed("%s: positions numbered from padding_idx + 1 = %d, as its own forward numbers them",
                       type(instance).__name__, padding_idx + 1)
    inputs["position_ids"] = ours
    return inputs
