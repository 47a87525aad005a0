"""model-qwen2-vl-rope-deltas-steps: Qwen2-VL keeps the M-RoPE offsets of the last prompt it read on the model, not
with its cache: a turn that continues a cache (out.past_key_values, a deep-copied prompt cache) after any other call
takes another prompt's positions (silently wrong; 4.47.0-5.1: prepare_inputs_for_generation reads them at every
step)

The correction is shared with model-qwen2-5-vl-rope-deltas-steps, model-qwen2-5-vl-rope-deltas, model-qwen2-vl-rope-
deltas: ``patches/models/shared/qwen2_vl_rope_deltas.py``, whose docstring gives the defects, how they are detected and
the correction.
"""

from hf_genfix._patches.models.shared.qwen2_vl_rope_deltas import install_qwen2_vl_steps as install

__all__ = ["install"]
