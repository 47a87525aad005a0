"""model-lfm2-conv-continuation: LFM2's short-convolution layers lose the cached convolution window for
several tokens after a cache (a second turn from generate()'s returned cache, a reused prefix cache, a chunk, chunked
prefill, assisted decoding's drafts): silently wrong.

The correction is shared with model-lfm2-moe-conv-continuation:
``patches/models/shared/short_conv_continuation.py``, whose docstring gives the defect, how it is detected and the
correction.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.short_conv_continuation import NOT_BITWISE, Lfm2AssistedUnsupported
from hf_genfix._patches.models.shared.short_conv_continuation import install as install_model

__all__ = ["NOT_BITWISE", "Lfm2AssistedUnsupported", "install"]


def install(patcher: Any) -> None:
    install_model(patcher, "lfm2")
