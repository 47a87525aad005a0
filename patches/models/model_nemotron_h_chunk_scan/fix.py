"""model-nemotron-h-chunk-scan: NemotronH's Mamba-2 scan (no CUDA kernels) is wrong past its first chunk, and after a
cache (5.3.0, where the model first ships, to 5.14.1).

The defect. ``NemotronHMamba2Mixer.torch_forward`` is Zamba2's mixer (``model-zamba2-chunk-scan``) with the same
inter-chunk sum over the target chunks (``.sum(dim=2)``) where the state entering a chunk is a sum over the source
chunks. A prompt longer than ``config.chunk_size`` (128 in NemotronH's default config) gets every chunk after the
first, and the SSM state it leaves in the cache, silently wrong, and the no-cache forward is not causal: the loud tiny
NemotronH (chunks of 4) gives 0.29-0.38 between the first positions of a 16-token forward and a forward of those
positions alone. Generation inherits it (the open record of session 20: a plain cached generate() 0.0532 off from its
first step on 5.13-5.14 was this: the no-cache reference itself scanned wrongly). 5.15.0 moved the scan into
``mamba2_chunk_scan``, which sums over the source chunks. No upstream issue found.

Detection (``probe``): the result cannot depend on the chunk size, by definition. The loud tiny NemotronH with chunk 4:
a no-cache forward of 14 tokens against the same model with one chunk covering them all, and a greedy cached
``generate()`` of a 10-token prompt, every step against that one-chunk forward.

Correction. The models family's ``mamba2_chunk_scan`` (Zamba2's): the first ``chunk_size`` tokens of a prompt through
upstream's own chunk path, the rest -- or every token after a cached state -- through upstream's own one-token path,
one at a time, with the caller's cache or a private one of the release's own layout (``NemotronHHybridDynamicCache``
on 5.3-5.4, ``DynamicCache(config=...)`` later). Upstream untouched where it is right (one token; a prompt within one
chunk), so bitwise there.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared import mamba2_chunk_scan

MODULE = "transformers.models.nemotron_h.modeling_nemotron_h"


def install(patcher: Any) -> None:
    mamba2_chunk_scan.install(patcher, MODULE, "NemotronHMamba2Mixer", "NemotronHHybridDynamicCache", __name__)
