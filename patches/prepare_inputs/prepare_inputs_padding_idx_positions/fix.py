"""prepare-inputs-padding-idx-positions: from 5.2, ``generate()`` numbers the positions of RoBERTa-style decoders
from 0, where the model itself numbers them from ``padding_idx + 1``.

The defect. RoBERTa and the models built on its embeddings (XLM-RoBERTa, XLM-RoBERTa-XL, CamemBERT,
Data2VecText, RoBERTa-PreLayerNorm, measured; X-MOD from its code) keep fairseq's numbering: a forward given no
``position_ids`` gives the real tokens positions ``padding_idx + 1, padding_idx + 2, ...`` and every padding token
``padding_idx`` (``create_position_ids_from_input_ids``); the position embeddings were trained on those rows. From 5.2,
``generate()`` makes ``position_ids`` itself for every model whose forward takes them
(``GenerationMixin._prepare_position_ids_for_generation``: the attention mask's running count minus one, or
``arange``) and hands them to the model, which then reads rows 0, 1, ... of its position table: every position of
every prompt and every generated token off by ``padding_idx + 1``, in a plain ``generate()`` of one unpadded row,
with or without a cache. Measured with a tiny RoBERTa decoder (``is_decoder=True``, weights redrawn at std 0.3):
its greedy logits differ from a forward of the same tokens by 7.33 on 5.2.0, 5.5.2, 5.12.1, 5.16.0 and 5.25.0. (The
releases before 5.2 make the same 0-based positions in ``prepare_inputs_for_generation`` each step: 4.33 on 4.46.3
to 4.57.6, on file in patches/open-findings.json; XLM-RoBERTa-XL's own override there numbers them right.)

Detection (``probe``): that tiny decoder, a left-padded batch of two prompts, ``generate()`` with a cache; every
step's logits against a no-cache forward of each unpadded row (the model's own numbering).

Correction. ``_prepare_position_ids_for_generation`` is wrapped: for a model whose base model's embeddings number
positions from ``padding_idx`` (an ``int`` ``padding_idx`` and the ``create_position_ids_from_input_ids`` that
forward calls when given none), the returned positions are renumbered as the model numbers them: each real token
(mask 1, or every token where there is no mask) ``padding_idx + 1`` plus its 0-based index, each padding token
``padding_idx``. Later steps continue from the last one as upstream's do. Any other model, a mask that is not 2D
or does not match, or an answer that is not a 2D tensor: upstream's positions as they are.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

TARGET = "transformers.generation.utils:GenerationMixin._prepare_position_ids_for_generation"


def install(patcher: Any) -> None:
    patcher.require(TARGET, "inputs_tensor", "model_kwargs")
    patcher.wrap(TARGET, _prepare_position_ids)


def padding_idx_of(model: Any) -> int | None:
    """The ``padding_idx`` a model's own positions start after, where its base model's embeddings number them
    fairseq's way (RoBERTa's ``create_position_ids_from_input_ids``); None for every other model."""
    base = getattr(model, "base_model", None)
    embeddings = getattr(base, "embeddings", None)
    padding_idx = getattr(embeddings, "padding_idx", None)
    if type(padding_idx) is not int or padding_idx < 0 or not hasattr(embeddings, "position_embeddings") \
            or not callable(getattr(type(embeddings), "create_position_ids_from_input_ids", None)):
        return None
    return padding_idx


def _prepare_position_ids(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    if record.on:
        record.seen()
    padding_idx = padding_idx_of(instance)
    if padding_idx is None:
        return record.through(wrapped, args, kwargs)
    positions = wrapped(*args, **kwargs)
    model_kwargs = args[1] if len(args) > 1 else kwargs.get("model_kwargs")
    mask = model_kwargs.get("attention_mask") if isinstance(model_kwargs, dict) else None
    if not isinstance(positions, torch.Tensor) or positions.dim() != 2:
        record.unchanged()
        return positions
    if mask is None:
        renumbered = positions + (padding_idx + 1)
    elif isinstance(mask, torch.Tensor) and mask.dim() == 2 and mask.shape[-1] == positions.shape[-1] \
            and mask.shape[0] in (1, positions.shape[0]):
        real = mask.to(positions.device) != 0
        renumbered = torch.where(real, positions + (padding_idx + 1), torch.full_like(positions, padding_idx))
    else:
        record.unchanged()  # a mask we cannot read against these positions: upstream's
        return positions
    if record.on:
        record.changed("%s: positions numbered from padding_idx + 1 = %d, as its own forward numbers them",
                       type(instance).__name__, padding_idx + 1)
    return renumbered
