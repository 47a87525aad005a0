"""The probe of ``model-qwen2-vl-cache-position`` (shared with model-qwen2-5-vl-cache-position:
``patches/models/shared/mrope_cache_position_probes.py``).
"""

from hf_genfix._patches.models.shared.mrope_cache_position_probes import (
    probe_qwen2_vl as probe,
)

__all__ = ["probe"]
