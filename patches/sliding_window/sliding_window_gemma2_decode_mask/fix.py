"""sliding-window-gemma2-decode-mask: Gemma-2's sliding layers mask the wrong keys once a cache is in use (4.46-4.48.1).

The correction is shared with sliding-window-cohere2-decode-mask (Cohere-2 copied the layer):
``patches/sliding_window/shared/decode_mask.py``, whose docstring gives the defect, how it is detected and the
correction.
"""

from hf_genfix._patches.sliding_window.shared.decode_mask import install_gemma2 as install

__all__ = ["install"]
