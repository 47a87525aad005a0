"""The probe of ``model-qwen2-5-vl-vision-positions`` (shared with model-qwen2-vl-vision-positions:
``patches/models/shared/mrope_vision_positions_probes.py``).
"""

from hf_genfix._patches.models.shared.mrope_vision_positions_probes import probe_qwen2_5_vl as probe

__all__ = ["probe"]
