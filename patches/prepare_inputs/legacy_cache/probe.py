"""The probe of ``legacy-cache`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any


def probe() -> dict[str, Any]:
    from hf_genfix.oracles.legacy import check_legacy_generate, legacy_model_class
    from hf_genfix.oracles.tiny import tiny_model

    return check_legacy_generate(tiny_model("llama", model_class=legacy_model_class()))
