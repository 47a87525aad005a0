"""model-idefics2-uncached-pixels: 5.0-5.3: Idefics2 with generate(use_cache=False) drops the image after the first
step and reads its placeholder tokens as text: silently wrong from the second generated token

The correction is shared with model-idefics3-uncached-pixels, model-smolvlm-uncached-pixels:
``patches/models/shared/idefics_uncached_pixels.py``, whose docstring gives the defects, how they are detected and the
correction.
"""

from hf_genfix._patches.models.shared.idefics_uncached_pixels import install_idefics2 as install

__all__ = ["install"]
