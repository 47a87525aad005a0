"""The probe of ``padding-side`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any


def probe() -> dict[str, Any]:
    """Llama-2-style and Mistral-style local repos (no padding_side in their config) load with the 4.x side."""
    from hf_genfix.oracles.padding import PADDING_SIDE_4X, check_padding_side
    from hf_genfix.oracles.tokenizers import load_tokenizer

    figures = {}
    for layout in ("llama2", "mistral"):
        tokenizer = load_tokenizer(layout)
        check_padding_side(tokenizer, PADDING_SIDE_4X[layout], f"{layout}-style repo")
        figures[layout] = tokenizer.padding_side
    return figures
