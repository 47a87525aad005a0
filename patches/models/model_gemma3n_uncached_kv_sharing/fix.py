"""model-gemma3n-uncached-kv-sharing: without a cache, Gemma-3n's KV-sharing layers compute keys and values of
their own instead of reusing the shared ones (a forward or generate() with use_cache=False, and training on 4.x):
silently wrong.

The correction is shared with model-gemma4-uncached-kv-sharing: ``patches/models/shared/kv_sharing_uncached.py``,
whose docstring gives the defect, how it is detected and the correction.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.kv_sharing_uncached import NOT_BITWISE
from hf_genfix._patches.models.shared.kv_sharing_uncached import install as install_model

__all__ = ["NOT_BITWISE", "install"]


def install(patcher: Any) -> None:
    install_model(patcher, "gemma3n")
