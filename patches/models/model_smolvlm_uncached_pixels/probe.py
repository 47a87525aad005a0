"""The probe of ``model-smolvlm-uncached-pixels`` (shared with model-idefics2-uncached-pixels, model-idefics3-uncached-
pixels: ``patches/models/shared/idefics_uncached_pixels_probes.py``).
"""

from hf_genfix._patches.models.shared.idefics_uncached_pixels_probes import probe_smolvlm as probe

__all__ = ["probe"]
