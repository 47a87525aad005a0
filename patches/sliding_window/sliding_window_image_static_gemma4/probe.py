"""The probe of ``sliding-window-image-static-gemma4`` (shared with sliding-window-image-index-gemma3, sliding-window-
image-static-gemma3: ``patches/sliding_window/shared/image_static_probes.py``).
"""

from hf_genfix._patches.sliding_window.shared.image_static_probes import probe_gemma4 as probe

__all__ = ["probe"]
