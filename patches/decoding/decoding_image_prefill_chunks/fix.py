"""decoding-image-prefill-chunks: 5.3-5.22: generate(prefill_chunk_size=k) with an image in a prompt longer than k
gives the image to the first chunk only while its placeholders span several: every image-text model silently wrong
from the first token

The correction is shared with decoding-image-prefill-chunks-bidirectional:
``patches/decoding/shared/image_prefill_chunks.py``, whose docstring gives the defects, how they are detected and the
correction.
"""

from hf_genfix._patches.decoding.shared.image_prefill_chunks import install as install

__all__ = ["install"]
