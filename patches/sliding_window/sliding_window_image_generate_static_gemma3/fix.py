"""sliding-window-image-generate-static-gemma3: 4.53: Gemma-3 generate() with an image prompt and a static cache: the
image block's bidirectional mask is dropped (silently wrong logits)

The correction is shared with sliding-window-image-generate-static-gemma4:
``patches/sliding_window/shared/image_generate_static.py``, whose docstring gives the defects, how they are detected and
the correction.
"""

from hf_genfix._patches.sliding_window.shared.image_generate_static import install_gemma3 as install

__all__ = ["install"]
