"""The probe of ``sliding-window-image-mask-gemma3`` (shared with sliding-window-image-mask-gemma4:
``patches/sliding_window/shared/image_mask_probes.py``).
"""

from hf_genfix._patches.sliding_window.shared.image_mask_probes import probe_gemma3 as probe

__all__ = ["probe"]
