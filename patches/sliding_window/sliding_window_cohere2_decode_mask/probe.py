"""The probe of ``sliding-window-cohere2-decode-mask`` (shared with sliding-window-gemma2-decode-mask:
``patches/sliding_window/shared/decode_mask_probes.py``).
"""

from hf_genfix._patches.sliding_window.shared.decode_mask_probes import probe_cohere2 as probe

__all__ = ["probe"]
