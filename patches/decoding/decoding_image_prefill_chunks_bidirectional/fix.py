"""decoding-image-prefill-chunks-bidirectional: 5.23+: generate(prefill_chunk_size=k) on Gemma-3, Gemma-4 and PaliGemma
splits their bidirectional image (PaliGemma: image + prompt prefix) attention at the chunk boundaries (silently
wrong from the first token)

The correction is shared with decoding-image-prefill-chunks: ``patches/decoding/shared/image_prefill_chunks.py``, whose
docstring gives the defects, how they are detected and the correction.
"""

from hf_genfix._patches.decoding.shared.image_prefill_chunks import install_bidirectional as install

__all__ = ["install"]
