"""The probe of ``sliding-window-full-cache-qwen2-moe`` (shared with sliding-window-full-cache-phimoe:
``patches/sliding_window/shared/full_cache_probes.py``).
"""

from hf_genfix._patches.sliding_window.shared.full_cache_probes import probe_qwen2_moe as probe

__all__ = ["probe"]
