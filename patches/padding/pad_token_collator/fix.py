"""pad-token-collator: with pad == eos, ``DataCollatorForLanguageModeling(mlm=False)`` hides every real eos label.

The defect. The causal-LM collator builds its labels from ``input_ids`` and sets -100 wherever the id equals the
pad id. When the pad token is the eos token, every real eos of the data gets label -100 as well, and a model
fine-tuned on such batches never learns to stop (huggingface/transformers#23530, open; every release measured,
4.40.2 .. 5.24.0).

Why hf_genfix carries it. ``pad-token`` makes eos the pad token of decoder-only tokenizers that have none, and
the same ``AutoTokenizer.from_pretrained`` call loads tokenizers for training. A user who sets pad = eos by hand,
as upstream's error message suggests, gets upstream's behaviour; hf_genfix, having chosen the pad token itself,
takes the consequence: for tokenizers whose pad ``pad-token`` assigned (and while it is still that eos), the
collator's labels are masked by the padding positions instead (``attention_mask``, or the examples' lengths),
which is exactly what a distinct pad token would have given. Other training code that masks labels by
``pad_token_id`` is outside transformers and keeps its behaviour; ``docs/padding.md`` says to pick a dedicated
pad token for training.

A separate patch from ``pad-token`` because it lives in ``transformers.data.data_collator``, which only training
programs import: it is installed when that module is, while ``pad-token`` is installed with ``AutoTokenizer``.
"""

from __future__ import annotations

from typing import Any, Mapping

from hf_genfix._patches.padding.shared.pad_mark import pad_assigned_by_hf_genfix

from hf_genfix.toolkit import recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

COLLATOR_CALLS = (
    "transformers.data.data_collator:DataCollatorForLanguageModeling.torch_call",
    "transformers.data.data_collator:DataCollatorForLanguageModeling.numpy_call",
)


def install(patcher: Any) -> None:
    for target in COLLATOR_CALLS:
        patcher.wrap(target, _collate)


def _collate(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    batch = wrapped(*args, **kwargs)
    tokenizer = getattr(instance, "tokenizer", None)
    if getattr(instance, "mlm", True) or tokenizer is None or not pad_assigned_by_hf_genfix(tokenizer):
        return batch
    labels, ids = batch.get("labels"), batch.get("input_ids")
    if labels is None or ids is None or labels.shape != ids.shape:
        return batch
    examples = args[0] if args else kwargs.get("examples")
    attended = _attended(batch, examples, tokenizer.padding_side)
    if attended is None:
        return batch
    hidden = (labels == -100) & attended & (ids == tokenizer.pad_token_id)
    if hidden.any():
        labels = labels.clone() if hasattr(labels, "clone") else labels.copy()
        labels[hidden] = ids[hidden]
        batch["labels"] = labels
        if record.on:
            record.changed("%d real eos label(s) kept (pad == eos, chosen by hf_genfix)",
                            int(hidden.sum()))
    return batch


def _attended(batch: Mapping[str, Any], examples: Any, side: str) -> Any:
    """Where the batch holds real tokens (not padding), shaped like ``input_ids``; None when unknown."""
    ids = batch["input_ids"]
    mask = batch.get("attention_mask")
    if mask is not None and mask.shape == ids.shape:
        return mask != 0
    if not examples:
        return None
    lengths = []
    for example in examples:
        row = example.get("input_ids") if isinstance(example, Mapping) else example
        if row is None:
            return None
        lengths.append(len(row))
    import numpy as np

    width = ids.shape[1]
    columns = np.arange(width)[None, :]
    counts = np.asarray(lengths)[:, None]
    attended = columns >= width - counts if side == "left" else columns < counts
    if isinstance(ids, np.ndarray):
        return attended
    import torch

    return torch.from_numpy(attended).to(ids.device)
