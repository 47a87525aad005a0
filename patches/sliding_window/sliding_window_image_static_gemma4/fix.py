"""sliding-window-image-static-gemma4: Gemma-4 with images and a StaticCache larger than the window: IndexError (the
sliding layers' image mask is sized for a full-attention layer)

The correction is shared with sliding-window-image-index-gemma3, sliding-window-image-static-gemma3:
``patches/sliding_window/shared/image_static.py``, whose docstring gives the defects, how they are detected and the
correction.
"""

from hf_genfix._patches.sliding_window.shared.image_static import install_gemma4 as install

__all__ = ["install"]
