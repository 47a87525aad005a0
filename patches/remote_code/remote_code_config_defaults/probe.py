"""The probe of ``remote-code-config-defaults`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any


def probe() -> dict[str, Any]:
    from hf_genfix.oracles.legacy_models import check_family, check_family_forward

    return {**check_family("chatglm3"), "forward": check_family_forward("chatglm3")}
