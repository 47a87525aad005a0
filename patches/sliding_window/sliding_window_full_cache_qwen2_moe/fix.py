"""sliding-window-full-cache-qwen2-moe: Qwen2-MoE with use_sliding_window: cached generation is silently wrong once the
sequence passes the window (a sliding-layer cache under a mask built for a cache that keeps every key)

The correction is shared with sliding-window-full-cache-phimoe: ``patches/sliding_window/shared/full_cache.py``, whose
docstring gives the defects, how they are detected and the correction.
"""

from hf_genfix._patches.sliding_window.shared.full_cache import install_qwen2_moe as install

__all__ = ["install"]
