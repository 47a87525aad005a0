"""The probe of ``sliding-window-image-index-gemma3`` (shared with sliding-window-image-static-gemma3, sliding-window-
image-static-gemma4: ``patches/sliding_window/shared/image_static_probes.py``).
"""

from hf_genfix._patches.sliding_window.shared.image_static_probes import probe_gemma3 as probe

__all__ = ["probe"]
