"""sliding-window-full-cache-phimoe: PhiMoE: cached generation is silently wrong once the sequence passes the sliding
window (a sliding-layer cache under a mask built for a cache that keeps every key)

The correction is shared with sliding-window-full-cache-qwen2-moe: ``patches/sliding_window/shared/full_cache.py``,
whose docstring gives the defects, how they are detected and the correction.
"""

from hf_genfix._patches.sliding_window.shared.full_cache import install_phimoe as install

__all__ = ["install"]
