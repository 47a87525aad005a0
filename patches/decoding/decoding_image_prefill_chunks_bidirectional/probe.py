"""The probe of ``decoding-image-prefill-chunks-bidirectional`` (shared with decoding-image-prefill-chunks:
``patches/decoding/shared/image_prefill_chunks_probes.py``).
"""

from hf_genfix._patches.decoding.shared.image_prefill_chunks_probes import probe_bidirectional as probe

__all__ = ["probe"]
