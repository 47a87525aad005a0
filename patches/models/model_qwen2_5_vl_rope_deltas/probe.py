"""The probe of ``model-qwen2-5-vl-rope-deltas`` (shared with model-qwen2-5-vl-rope-deltas-steps, model-qwen2-vl-rope-
deltas-steps, model-qwen2-vl-rope-deltas: ``patches/models/shared/qwen2_vl_rope_deltas_probes.py``).
"""

from hf_genfix._patches.models.shared.qwen2_vl_rope_deltas_probes import probe_qwen2_5_vl as probe

__all__ = ["probe"]
