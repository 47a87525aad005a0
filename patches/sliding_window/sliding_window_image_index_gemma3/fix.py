"""sliding-window-image-index-gemma3: 4.53: Gemma-3 with images and a StaticCache wider than the prompt raises
IndexError (the image mask reads token_type_ids at every cache position)

The correction is shared with sliding-window-image-static-gemma3, sliding-window-image-static-gemma4:
``patches/sliding_window/shared/image_static.py``, whose docstring gives the defects, how they are detected and the
correction.
"""

from hf_genfix._patches.sliding_window.shared.image_static import install_gemma3_token_types as install

__all__ = ["install"]
