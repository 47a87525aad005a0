"""The probe of ``pad-token-collator`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any


def probe() -> dict[str, Any]:
    """A Llama-3-style tokenizer whose pad hf_genfix chose (eos): the collator keeps every real eos label."""
    from hf_genfix._patches.padding.shared.pad_mark import adopt_eos_as_pad
    from transformers import DataCollatorForLanguageModeling

    from hf_genfix.oracles.outcome import DefectObserved
    from hf_genfix.oracles.tokenizers import load_tokenizer

    tokenizer = load_tokenizer("llama3", pad_token=None)  # pad-token leaves a caller's pad_token= alone
    adopt_eos_as_pad(tokenizer)  # as pad-token does, whether or not that patch is installed now
    eos = tokenizer.eos_token_id
    rows = [tokenizer(text)["input_ids"] + [eos] for text in ("hello world, how are you", "the fox")]
    batch = DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm=False)(
        [{"input_ids": r, "attention_mask": [1] * len(r)} for r in rows]
    )
    ids, labels = batch["input_ids"], batch["labels"]
    real = batch["attention_mask"].bool() & (ids == eos)
    kept = int((labels[real] == eos).sum())
    if kept != int(real.sum()):
        raise DefectObserved(f"DataCollatorForLanguageModeling(mlm=False) kept {kept} of {int(real.sum())} real "
                             f"eos labels (pad == eos)", eos_labels_kept=kept, eos_labels=int(real.sum()))
    return {"eos_labels_kept": kept, "rows": len(rows)}
