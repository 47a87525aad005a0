"""prepare-inputs-full-ids-positions: on 5.2.0, a model fed the whole ids every step gets one position for all.

The defect. 5.2.0's ``generate()`` computes ``position_ids`` itself (from the attention mask) and, after each
step, keeps only the new token's position when the cache is used (``_update_model_kwargs_for_generation``:
``position_ids[..., -1:] + 1``): the generic ``prepare_inputs_for_generation`` cuts the ids to the new token,
so the two agree. A model whose own ``prepare_inputs_for_generation`` feeds the whole ids every step and passes
the other keywords through (OpenAI-GPT: no KV cache, "old model with reduced inputs") then gets ``input_ids`` of
the whole sequence with ``position_ids`` of shape ``(batch, 1)``: its forward broadcasts that one position over
every token, so from the second generated token on every token is embedded at the last position -- silently
wrong logits (0.0033 on a tiny OpenAI-GPT, cached greedy generation; 0.0052 for an unpadded batch of 2). 5.1.0
passed no ``position_ids`` (the forward counted them itself); 5.3.0 keeps the whole ``position_ids`` and cuts them
in ``prepare_inputs_for_generation``, which is right for both kinds of model.

Detection. ``probe()``: a tiny OpenAI-GPT, greedy ``generate()`` with ``use_cache=True`` (the default), 6 new
tokens, every step against a no-cache forward of the row.

Correction. Every class's own ``prepare_inputs_for_generation`` (and the generic one) is wrapped; the inputs it
returns are looked at. Where they feed more ids than they give positions for, the positions are completed into
the ones of every id fed: from the attention mask when it covers the ids (the rule 5.2.0's ``generate()`` itself
uses: ``cumsum(mask) - 1``, 0 on pads), else consecutive positions ending at the ones given. Only when the given
positions are exactly the tail of the completed ones: any other layout is not one this fix knows, and the inputs
are left as upstream made them. Inputs whose ids and positions agree (every model with a KV cache) are returned
as they are.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import recorder
from hf_genfix.toolkit.prepare_inputs import GENERIC, wrap_overrides

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()


def install(patcher: Any) -> None:
    patcher.require(GENERIC)
    wrap_overrides(patcher, _positions_for_every_id)


def _positions_for_every_id(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    inputs = wrapped(*args, **kwargs)
    full = _completed(inputs)
    if full is None:
        record.unchanged()
        return inputs
    return {**inputs, "position_ids": full}


def _completed(inputs: Any) -> Any:
    """The positions of every id fed, or None where the inputs agree already or the layout is not known."""
    import torch

    if not isinstance(inputs, dict):
        return None
    ids, given = inputs.get("input_ids"), inputs.get("position_ids")
    if not (torch.is_tensor(ids) and torch.is_tensor(given)) or ids.dim() != 2 or given.dim() != 2:
        return None
    n, k = ids.shape[-1], given.shape[-1]
    if k >= n or given.shape[0] != ids.shape[0]:
        return None
    mask = inputs.get("attention_mask")
    if torch.is_tensor(mask) and mask.dim() == 2 and mask.shape[0] == ids.shape[0] and mask.shape[-1] >= n:
        full = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)[:, -n:]
    else:
        full = given[:, -1:] - torch.arange(n - 1, -1, -1, device=given.device, dtype=given.dtype)
        if bool((full < 0).any()):
            return None
    full = full.to(dtype=given.dtype, device=given.device)
    return full if torch.equal(full[:, -k:], given) else None
