"""The probe of ``remote-code-mask-warning`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any


def probe() -> dict[str, Any]:
    import importlib
    import logging
    import warnings

    from hf_genfix.oracles.outcome import DefectObserved, ProbeSkipped

    try:
        module = importlib.import_module("transformers.modeling_attn_mask_utils")
    except ImportError as exc:
        raise ProbeSkipped("this release has no transformers.modeling_attn_mask_utils") from exc
    logger = getattr(module, "logger", None) or logging.getLogger(module.__name__)  # 5.3+ warns without one

    class Formatting(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            record.getMessage()  # what every formatter does; raises on a malformed call

    handler, level = Formatting(), logger.level
    clear = getattr(getattr(logging.Logger, "warning_once", None), "cache_clear", None)
    if clear is not None:
        clear()  # warning_once is lru-cached: make this call log again
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module.AttentionMaskConverter(is_causal=True)
    except TypeError as exc:
        raise DefectObserved(f"AttentionMaskConverter(is_causal=True) fails logging its deprecation: {exc}",
                             error=type(exc).__name__) from exc
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return {"logged": True}
