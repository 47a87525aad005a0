"""The probe of ``remote-code-attention-mask`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any


def probe() -> dict[str, Any]:
    from hf_genfix.oracles.legacy_models import EQUAL_ROWS, check_family

    return check_family("deepseek", rows=EQUAL_ROWS)
