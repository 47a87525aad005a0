"""model-jamba-chunk-state: Jamba's Mamba mixer restarts its SSM scan from zeros when several tokens follow a cache:
a second turn from generate()'s returned cache, a reused prefix cache, a chunk after a cache and chunked prefill are
silently wrong (see the manifest for the range).

The defect. ``JambaMambaMixer.forward`` is the mixer Mamba's and Zamba's were written from: its one-token path reads
and advances the cached state; its "prompt" path continues the convolution from the cached window but scans from a
zero state. Jamba's cache also holds attention layers, so generate() slices a continued conversation right by their
length: only the mixer is wrong. Found by the sweep (session 16) once Jamba was built tiny: on 5.24.0 a second turn
0.338, a reused prefix cache 0.763, 10 tokens after a cache 0.033, chunked prefill 0.0037 (max |logit diff| against a
no-cache forward).

Detection. ``probe()``: a first turn generated, then a second turn of three more tokens continuing from the returned
cache, every step against a no-cache forward of the conversation (the loud tiny Jamba of the continuation probes).

Correction. The models family's ``ssm_continuation.split_after_state`` (Zamba's and Mamba's): a chunk after this
layer's state goes through upstream's one-token path, one token at a time. Everything else is upstream's.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.ssm_continuation import SPLIT_NOT_BITWISE, install_continuation

MIXER = "transformers.models.jamba.modeling_jamba:JambaMambaMixer.forward"
# The one-token path token by token, where upstream scans a chunk from a zero state: other float operations, so a
# chunk after a state whose loss is too small to matter differs by rounding, not bitwise (as for Zamba).
NOT_BITWISE = SPLIT_NOT_BITWISE


def install(patcher: Any) -> None:
    install_continuation(patcher, MIXER)
