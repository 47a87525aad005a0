"""The probe of ``right-padding`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any


def probe() -> dict[str, Any]:
    """Tiny Llama, a ragged right-padded batch (one row unpadded), greedy: every row against the oracle."""
    from hf_genfix.oracles.padding import check_right_padded_generate, ragged_rows
    from hf_genfix.oracles.tiny import tiny_model

    model = tiny_model("llama")
    return check_right_padded_generate(model, ragged_rows([5, 3, 7, 2]), max_new_tokens=4)
