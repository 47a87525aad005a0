"""model-mamba2-chunk-scan: Mamba-2's torch scan (no CUDA kernels) is wrong past its first chunk, and after a cache
(4.46-4.47; 4.48.0 fixed it).

The defect. ``Mamba2Mixer.torch_forward`` carries the SSM state from chunk to chunk with Zamba2's sum over the target
chunks (``.sum(dim=2)``, ``model-zamba2-chunk-scan``), where the state entering a chunk is a sum over the source
chunks. A prompt longer than ``config.chunk_size`` (256 by default) gets every chunk after the first, and the state
it leaves in the cache, silently wrong, and the no-cache forward is not causal (0.413 on the loud tiny Mamba-2 with
chunks of 4). Every generate() of such a prompt inherits it (a plain cached generate() 0.148 off a one-chunk forward).
4.48.0 sums over the source chunks (``.sum(dim=1)`` on the transposed decays). Until session 22 the sweep never saw
it: its causality check dropped the model as "an encoder used as a decoder".

Detection (``probe``): the result cannot depend on the chunk size, by definition. The loud tiny Mamba-2 with chunk 4:
a no-cache forward of 14 tokens against the same model with one chunk covering them all, and a greedy cached
``generate()`` of a 10-token prompt, every step against that one-chunk forward.

Correction. The models family's ``mamba2_chunk_scan`` (Zamba2's and NemotronH's): the first ``chunk_size`` tokens of a
prompt through upstream's own chunk path, the rest -- or every token after a cached state -- through upstream's own
one-token path, one at a time, with the caller's ``Mamba2Cache`` or a private one (its one-token path is chosen by
``seqlen_offset``, set for the loop and restored). A left pad past the first chunk is upstream's: this mixer's
one-token path does not mask a pad as its chunk path does. This release's one-token torch path broadcasts the gate
of a batch against its own rows, so it cannot take a batch: a batch without a cache (a plain forward, training and
scoring code, generate(use_cache=False)) is scanned one row at a time, each row exactly as one row is (the rows of a
forward without a cache are independent); a batch whose rows live in a cache stays upstream's (and one that continues
a cached state is refused: model-mamba2-batch).
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared import mamba2_chunk_scan

MODULE = "transformers.models.mamba2.modeling_mamba2"


def install(patcher: Any) -> None:
    # 4.46-4.47's one-token torch path broadcasts a batch's gate against its own rows ([b, 1, n] x [b, n] -> [b, b, n]):
    # a batch is split into rows where it has no cache, and is upstream's where it has one
    mamba2_chunk_scan.install(patcher, MODULE, "Mamba2Mixer", "Mamba2Cache", __name__, replay_pads=False, one_row=True)
