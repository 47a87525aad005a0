"""The probe of ``remote-code-model-methods`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any


def probe() -> dict[str, Any]:
    from hf_genfix.oracles.legacy_models import check_family, check_family_stream

    return {**check_family("chatglm3"), "stream": check_family_stream("chatglm3")}
