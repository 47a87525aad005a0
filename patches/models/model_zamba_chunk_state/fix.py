"""model-zamba-chunk-state: Zamba's Mamba mixer restarts its SSM scan from zeros when several tokens follow a cache
(5.24.0; see the manifest for the range): a second turn from generate()'s returned cache, a reused prefix cache and a
chunk after a cache are silently wrong.

The defect. ``ZambaMambaMixer.forward`` is Mamba's mixer of ``model-mamba-continuation``: its one-token path reads
and advances the cached state; its "prompt" path continues the convolution from the cached window but scans from a
zero state. Zamba's cache also holds attention layers, so generate() slices a continued conversation right by their
length: only the mixer is wrong. Measured on the hunt's loud tiny Zamba (3 layers, state 8, std 0.3) on 5.24.0:
second turn 3.02, reused prefix cache 2.59, a 5-token chunk after a cache 4.34 (max |logit diff| against a no-cache
forward).

Detection. ``probe()``: a first turn generated, then a second turn of three more tokens continuing from the returned
cache, every step against a no-cache forward of the conversation.

Correction. ``fixes.models._ssm_continuation.split_after_state``: a chunk after this layer's state goes through
upstream's one-token path, one token at a time. Everything else is upstream's.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.ssm_continuation import SPLIT_NOT_BITWISE, install_continuation

MIXER = "transformers.models.zamba.modeling_zamba:ZambaMambaMixer.forward"
# Where the state barely matters (the sweep's calibrated tiny Zamba: its per-head SSM projections keep their init), the
# chunk path upstream takes after a state is within rounding of the oracle, and ours (the one-token path, token by
# token) differs from it by that rounding only: 2.4e-07 to 8.3e-07 on 5.24.0 (chunked prefill, a chunk after a cache).
NOT_BITWISE = SPLIT_NOT_BITWISE


def install(patcher: Any) -> None:
    install_continuation(patcher, MIXER)
