"""The probe of ``decoding-image-prefill-chunks`` (shared with decoding-image-prefill-chunks-bidirectional:
``patches/decoding/shared/image_prefill_chunks_probes.py``).
"""

from hf_genfix._patches.decoding.shared.image_prefill_chunks_probes import probe as probe

__all__ = ["probe"]
