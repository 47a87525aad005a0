"""model-zamba2-chunk-scan: Zamba2's Mamba scan (no CUDA kernels) is wrong past its first chunk, and after a cache.

The defect. ``Zamba2MambaMixer.torch_forward`` (the path taken without the ``mamba-ssm`` kernels: every CPU, and a
GPU without them) scans a prompt in chunks of ``config.chunk_size`` tokens (256 by default) and carries the SSM
state from chunk to chunk with ``decay_chunk`` (``[batch, heads, target chunk, source chunk]``)::

    result = (decay_chunk[..., None, None] * states_permuted[:, :, None, ...]).sum(dim=2)

The state entering chunk z is the sum over the source chunks c of ``decay[z, c] * states[c]`` (dim 3); upstream sums
over the target chunks (dim 2). With one chunk and no earlier state the two are equal, so a prompt of at most
``chunk_size`` tokens is right; a longer one gets every chunk after the first, and the SSM state it leaves in the
cache, silently wrong (the forward is not even causal: 0.414 on the first 6 positions of a 14-token forward against
a 6-token one, tiny model with chunk 4). And several tokens after a cache that holds the state (chunked prefill, a
second turn from ``past_key_values``, a reused prefix cache) take the one-token path, which reads the first token
only. From Zamba2's first release (4.49.0) to 5.14.x (the same lines in 4.49.0, 4.57.6, 5.3.0, 5.12.0, 5.14.1);
5.15.0 moved the scan into ``mamba2_chunk_scan`` and sums over the source chunks (``.transpose(1, 3)`` then
``.sum(dim=1)``, as Mamba-2 has it) and continues several tokens from the cached state. No upstream issue found.

Detection (``probe``): the result cannot depend on the chunk size, by definition. A tiny Zamba2 with chunk 4: a
no-cache forward of 14 tokens against the same model with one chunk covering them all (the path upstream gets
right), and a greedy cached ``generate()`` of a 10-token prompt, every step against that one-chunk forward.

Correction. The models family's ``mamba2_chunk_scan`` (NemotronH's copy of this mixer has the same sum): the first
``chunk_size`` tokens of a prompt through upstream's own chunk path, the rest -- or every token after a cached state --
through upstream's own one-token path, one at a time, with the caller's cache or a private one of the release's own
layout (``Zamba2HybridDynamicCache`` where the release has it). Upstream untouched where it is right (one token; a
prompt within one chunk), so bitwise there.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared import mamba2_chunk_scan

MODULE = "transformers.models.zamba2.modeling_zamba2"
TARGET = f"{MODULE}:Zamba2MambaMixer.torch_forward"


def install(patcher: Any) -> None:
    mamba2_chunk_scan.install(patcher, MODULE, "Zamba2MambaMixer", "Zamba2HybridDynamicCache", __name__)
