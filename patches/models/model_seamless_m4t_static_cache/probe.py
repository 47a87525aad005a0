"""The probe of ``model-seamless-m4t-static-cache`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from hf_genfix._patches.models.shared.static_self_attention_probes import prober

probe = prober("seamless_m4t")
