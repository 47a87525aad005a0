"""prepare-inputs-padding-idx-positions / -steps: ``generate()`` numbers the positions of RoBERTa-style decoders from
0, where the model itself numbers them from ``padding_idx + 1``; each fix's docstring has its hook and range.

The defect they share. RoBERTa and the models built on its embeddings (XLM-RoBERTa, XLM-RoBERTa-XL, CamemBERT,
Data2VecText, RoBERTa-PreLayerNorm, measured; X-MOD from its code) keep fairseq's numbering: a forward given no
``position_ids`` gives the real tokens positions ``padding_idx + 1, padding_idx + 2, ...`` and every padding token
``padding_idx`` (``create_position_ids_from_input_ids``); the position embeddings were trained on those rows.
``generate()`` makes ``position_ids`` itself for every model whose forward takes them, the attention mask's running
count minus one (4.46 - 5.1: in the generic ``prepare_inputs_for_generation``, at every step; from 5.2: once, in
``_prepare_position_ids_for_generation``), and hands them to the model, which then reads rows 0, 1, ... of its
position table: every position of every token off by ``padding_idx + 1``, in a plain ``generate()`` of one unpadded
row, with or without a cache.

Correction (``renumbered``). Only for a model whose base model's embeddings number positions that way
(``padding_idx_of``), and only positions that are upstream's count of the mask from 0 (checked, not assumed): each
real token's position plus ``padding_idx + 1``, each padding token ``padding_idx``, as the model's own forward would
number them. Anything else (another model, a mask that is not 2-D or does not cover the positions, positions made
some other way): upstream's positions as they are.
"""

from __future__ import annotations

import sys
from typing import Any

# what a RoBERTa-style embeddings' forward calls to number the positions it is not given
_NUMBERING = "create_position_ids_from_input_ids"


def padding_idx_of(model: Any) -> int | None:
    """The ``padding_idx`` a model's own positions start after, where its base model's embeddings number them
    fairseq's way; None for every other model. Read from code, not names of classes: the embeddings have an ``int``
    ``padding_idx`` and a ``position_embeddings`` table, and their ``forward`` calls
    ``create_position_ids_from_input_ids`` (a function of the module in 4.x, a static method from 5.0), which
    resolves to something callable."""
    base = getattr(model, "base_model", None)
    embeddings = getattr(base, "embeddings", None)
    padding_idx = getattr(embeddings, "padding_idx", None)
    if type(padding_idx) is not int or padding_idx < 0 or not hasattr(embeddings, "position_embeddings"):
        return None
    cls = type(embeddings)
    code = getattr(getattr(cls, "forward", None), "__code__", None)
    if code is None or _NUMBERING not in code.co_names:
        return None
    module = sys.modules.get(cls.__module__)
    numbering = getattr(cls, _NUMBERING, None) or (vars(module).get(_NUMBERING) if module is not None else None)
    return padding_idx if callable(numbering) else None


def renumbered(positions: Any, mask: Any, padding_idx: int) -> Any:
    """``positions`` (upstream's, 2-D: the last columns of a count of ``mask`` from 0; where there is no mask, an
    ``arange`` from the cache's length) numbered as the model numbers them; None where they are not what that says
    (then upstream's stand)."""
    import torch

    if not isinstance(positions, torch.Tensor) or positions.dim() != 2 or positions.dtype.is_floating_point:
        return None
    width = positions.shape[-1]
    if mask is None:
        # upstream's arange after a cache's length (5.2+ without a mask): consecutive from the row's first
        counted = positions[:, :1] + torch.arange(width, device=positions.device)
        real = torch.ones_like(positions, dtype=torch.bool)
    elif isinstance(mask, torch.Tensor) and mask.dim() == 2 and mask.shape[-1] >= width \
            and mask.shape[0] in (1, positions.shape[0]):
        mask = mask.to(positions.device)
        real = (mask != 0)[:, -width:].expand_as(positions)
        counted = ((mask != 0).long().cumsum(-1) - 1)[:, -width:].expand_as(positions)
    else:
        return None
    if not torch.equal(positions[real], counted[real]):
        return None  # not the count this corrects (the caller's, or another hook's): upstream's
    return torch.where(real, positions + (padding_idx + 1), torch.full_like(positions, padding_idx))
