"""sliding-window-image-mask-gemma4: Gemma-4: the bidirectional image-token mask escapes the sliding window (and on
5.11/5.12 reaches the full-attention layers): silently wrong logits when an image block is longer than the window

The correction is shared with sliding-window-image-mask-gemma3: ``patches/sliding_window/shared/image_mask.py``, whose
docstring gives the defects, how they are detected and the correction.
"""

from hf_genfix._patches.sliding_window.shared.image_mask import install_gemma4 as install

__all__ = ["install"]
