"""The probe of ``remote-code-update-kwargs`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any


def probe() -> dict[str, Any]:
    from hf_genfix.oracles.legacy_models import check_family

    return check_family("chatglm3")
