"""model-qwen2-5-vl-vision-positions: Qwen2.5-VL on 5.3.0-5.5.x: the rotary positions of a video's frames are wrong,
and on 5.3.0-5.5.3 those of every image, the block's start multiplied by the time interval (silently wrong from the
prompt on, and every continuation of its cache)

The correction is shared with model-qwen2-vl-vision-positions: ``patches/models/shared/mrope_vision_positions.py``,
whose docstring gives the defect, how it is detected and the correction.
"""

from hf_genfix._patches.models.shared.mrope_vision_positions import install_qwen2_5_vl as install

__all__ = ["install"]
