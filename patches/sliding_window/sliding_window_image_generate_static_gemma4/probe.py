"""The probe of ``sliding-window-image-generate-static-gemma4`` (shared with sliding-window-image-generate-static-
gemma3: ``patches/sliding_window/shared/image_generate_static_probes.py``).
"""

from hf_genfix._patches.sliding_window.shared.image_generate_static_probes import probe_gemma4 as probe

__all__ = ["probe"]
