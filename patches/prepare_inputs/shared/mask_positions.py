"""prepare-inputs-mask-positions-ctrl / -openai-gpt / -roc-bert / -xlm-roberta-xl: a model whose own
``prepare_inputs_for_generation`` gives generate() a left-padded row's pads as positions (and, before 4.57, CTRL
and OpenAI-GPT drop the attention mask); each fix's docstring has its model and range.

The defect they share. A left-padded row's real tokens must sit at positions 0, 1, ... as they would alone, and must
not see the pads. ``generate()``'s generic ``prepare_inputs_for_generation`` passes the attention mask on and
derives the positions from it (``cumsum(mask) - 1``) for every model whose forward takes ``position_ids``. CTRL and
OpenAI-GPT override it ("inputs_embeds not working properly", "old model with reduced inputs"): before 4.57 they
return the ids (and CTRL its cache) only, so the forward attends to the pads and counts them as positions; from 4.57
they pass the mask on but give no positions, so a row behind k pads is embedded k positions late. Their forwards are
right when given both; upstream dropped the overrides (CTRL in 5.1, OpenAI-GPT in 5.2), so the generic method's
inputs reach them.

Correction. The class's own ``prepare_inputs_for_generation`` is wrapped. Where the call's 2-D attention mask has a
zero (a pad: upstream is right on a batch without one) and covers the ids fed, the inputs it returns get that mask
where they dropped it, and where they give no ``position_ids``, the positions of the ids fed, derived from the mask
as the generic method does (``cumsum(mask) - 1``, 1 on a pad, the last columns for the ids fed after a cache),
numbered as the model numbers them where it numbers from ``padding_idx + 1`` (XLM-RoBERTa-XL:
``padding_idx_positions``). Everything else is upstream's.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.prepare_inputs.shared.padding_idx_positions import padding_idx_of, renumbered
from hf_genfix.toolkit import hidden_from_warnings, recorder


def install(patcher: Any, target: str, patch_module: str) -> None:
    """Wrap ``target`` (a class's own ``prepare_inputs_for_generation``); ``patch_module`` is the fix's ``__name__``
    (its recorder)."""
    patcher.require(target)
    record = recorder(patch_module)
    patcher.wrap(target, lambda wrapped, instance, args, kwargs:
                 _with_mask_positions(record, wrapped, instance, args, kwargs))


@hidden_from_warnings
def _with_mask_positions(record: Any, wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    inputs = wrapped(*args, **kwargs)
    mask = _padding_mask(inputs, kwargs.get("attention_mask"))
    if mask is None:
        record.unchanged()
        return inputs
    added = {}
    if inputs.get("attention_mask") is None:
        added["attention_mask"] = mask  # dropped by the override (before 4.57): the forward attended to the pads
    if inputs.get("position_ids") is None:
        positions = mask.long().cumsum(-1) - 1
        positions.masked_fill_(mask == 0, 1)
        padding_idx = padding_idx_of(instance)
        if padding_idx is not None:  # a RoBERTa-style model numbers from padding_idx + 1 (XLM-RoBERTa-XL)
            positions = renumbered(positions, mask, padding_idx)
        added["position_ids"] = positions[:, -inputs["input_ids"].shape[1]:]
    if not added:
        record.unchanged()
        return inputs
    if record.on:
        record.changed("%s added from the attention mask (left padding)", " and ".join(sorted(added)))
    return {**inputs, **added}


def _padding_mask(inputs: Any, given: Any) -> Any:
    """The mask the inputs are judged by (theirs, else the call's), where it is a 2-D mask with a pad over the ids
    fed; None where upstream's inputs stand."""
    import torch

    if not isinstance(inputs, dict):
        return None
    ids = inputs.get("input_ids")
    mask = inputs.get("attention_mask")
    mask = given if mask is None else mask
    if not (torch.is_tensor(ids) and torch.is_tensor(mask)) or ids.dim() != 2 or mask.dim() != 2:
        return None
    if mask.shape[0] != ids.shape[0] or mask.shape[1] < ids.shape[1] or bool(mask.all()):
        return None
    return mask
