"""The probe of ``model-idefics2-uncached-pixels`` (shared with model-idefics3-uncached-pixels, model-smolvlm-uncached-
pixels: ``patches/models/shared/idefics_uncached_pixels_probes.py``).
"""

from hf_genfix._patches.models.shared.idefics_uncached_pixels_probes import probe_idefics2 as probe

__all__ = ["probe"]
