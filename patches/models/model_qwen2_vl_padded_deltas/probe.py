"""The probe of ``model-qwen2-vl-padded-deltas`` (shared with model-qwen2-5-vl-padded-deltas:
``patches/models/shared/qwen_vl_padded_deltas_probes.py``).
"""

from hf_genfix._patches.models.shared.qwen_vl_padded_deltas_probes import probe_qwen2_vl as probe

__all__ = ["probe"]
