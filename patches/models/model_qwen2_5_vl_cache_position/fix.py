"""model-qwen2-5-vl-cache-position: Qwen2.5-VL: a forward that continues a cache without cache_position places the new tokens' M-RoPE
positions at 0 instead of after the prompt (silently wrong from the first new token)

The correction is shared with model-qwen2-vl-cache-position: ``patches/models/shared/mrope_cache_position.py``, whose docstring gives
the defect, how it is detected and the correction.
"""

from typing import Any

from hf_genfix._patches.models.shared.mrope_cache_position import install_for


def install(patcher: Any) -> None:
    install_for(patcher, "qwen2_5_vl")
