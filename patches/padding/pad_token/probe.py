"""The probe of ``pad-token`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any


def probe() -> dict[str, Any]:
    """A Llama-3-style local repo (decoder-only, no pad token) can pad a batch, with eos as pad."""
    from hf_genfix.oracles.outcome import DefectObserved
    from hf_genfix.oracles.padding import check_can_pad
    from hf_genfix.oracles.tokenizers import load_tokenizer

    tokenizer = load_tokenizer("llama3")
    figures = check_can_pad(tokenizer, "llama3-style repo")
    if tokenizer.pad_token_id != tokenizer.eos_token_id:
        raise DefectObserved(f"llama3-style repo: pad id {tokenizer.pad_token_id} is not eos "
                             f"{tokenizer.eos_token_id}")
    return figures
