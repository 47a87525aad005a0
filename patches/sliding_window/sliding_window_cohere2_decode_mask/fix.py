"""sliding-window-cohere2-decode-mask: Cohere-2's sliding layers mask the wrong keys once a cache is in use
(4.48.0-4.48.1, its first two releases).

The correction is shared with sliding-window-gemma2-decode-mask (Cohere-2 copied Gemma-2's layer):
``patches/sliding_window/shared/decode_mask.py``, whose docstring gives the defect, how it is detected and the
correction.
"""

from hf_genfix._patches.sliding_window.shared.decode_mask import install_cohere2 as install

__all__ = ["install"]
