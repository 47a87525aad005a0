"""sliding-window-rollback-cache: on 4.56.x and 5.0.x, assisted decoding crashes once past the window.

The defect. The same ``ValueError: Cannot `crop` a `DynamicSlidingWindowLayer` after it has seen more tokens
than its sliding window`` as ``sliding-window-dynamic-full``, for other reasons:

- 4.56.x: the candidate generator gives the drafter's generate() call ``cache_implementation=None``, so the
  drafter builds its cache from its config, with sliding layers, and cropping it after a rejected draft fails
  (4.57.0 asks for ``"dynamic_full"`` there). Prompt lookup has no drafter and passes.
- 5.0.x: ``_prepare_cache_for_generation`` builds no cache unless ``cache_implementation`` is set, so in
  assisted and prompt-lookup decoding the target's first forward builds one from the config, with sliding layers
  (5.1.0 builds a full ``DynamicCache`` there).

Measured: 4.56.2 and 5.0.0 crash; 4.57.6 and 5.1.0 .. 5.3.0 pass; 4.55 and older have no sliding dynamic layers.

Detection. The probe of ``sliding-window-dynamic-full``: a tiny all-sliding Mistral (window 8), assisted decoding
with 1-token drafts for 12 + 16 tokens, tokens equal to plain greedy and logits equal to a no-cache forward.

Correction. The wrapper of ``sliding-window-dynamic-full`` around ``_prepare_cache_for_generation``: a cache
prepared for a run that will rewind it (a drafting mode, ``"dynamic_full"``, or the drafter's own call, which
4.56 marks with ``generation_config.is_assistant``) gets full layers, and where 5.0 prepares none it gets the full
``DynamicCache()`` that 5.1 prepares.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.sliding_window.shared import dynamic_full


def install(patcher: Any) -> None:
    dynamic_full.install(patcher)
