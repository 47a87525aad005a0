"""model-qwen2-vl-padded-deltas: Qwen2-VL on 5.2: the M-RoPE offsets of a left-padded row count its padding, so a turn
that continues the batch's cache (out.past_key_values, a deep-copied prompt cache) places a padded row's new tokens
early (silently wrong)

The correction is shared with model-qwen2-5-vl-padded-deltas: ``patches/models/shared/qwen_vl_padded_deltas.py``, whose
docstring gives the defects, how they are detected and the correction.
"""

from hf_genfix._patches.models.shared.qwen_vl_padded_deltas import install_qwen2_vl as install

__all__ = ["install"]
