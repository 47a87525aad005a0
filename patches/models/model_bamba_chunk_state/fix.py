"""model-bamba-chunk-state: Bamba's Mamba-2 mixer restarts its scan from zeros when several tokens follow a cache:
a second turn from generate()'s returned cache, a reused prefix cache and a chunk after a cache are silently wrong
(see the manifest for the range).

The defect. ``BambaMixer.forward`` (the Mamba-2 mixer, written from Falcon-H1's and Bamba's) has a one-token path
that reads and advances the cached convolution window and SSM state, and a "prompt" path that convolves behind
zeros and scans from a zero state, then overwrites the cache. Several tokens after a cache that holds this layer's
state take the prompt path and forget everything before them, while the attention layers beside it remember. The
hybrid's cache has attention layers, so generate() slices a continued conversation right by their length: only the
mixer is wrong. 5.13.0 rewrote the mixer to continue both states from the cache (``initial_states=`` the cached SSM
state). Found by the sweep (second-turn, prefix-reuse, chunk-after-cache on bamba); model-falcon-h1-chunk-state is
the same defect in Falcon-H1's copy of this mixer.

Detection. ``probe()``: a first turn generated, then a second turn of three more tokens continuing from the
returned cache, every step against a no-cache forward of the conversation (the loud tiny Bamba of the
continuation probes).

Correction. The models family's ``ssm_continuation.split_after_state`` (Jamba's, Zamba's and Mamba's): a chunk
after this layer's state goes through upstream's one-token path, one token at a time. Everything else (a prompt,
one token, a chunk whose mask has zeros) is upstream's.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.ssm_continuation import SPLIT_NOT_BITWISE, install_continuation

MIXER = "transformers.models.bamba.modeling_bamba:BambaMixer.forward"
# The one-token path token by token, where upstream scans a chunk from a zero state: other float operations.
NOT_BITWISE = SPLIT_NOT_BITWISE


def install(patcher: Any) -> None:
    install_continuation(patcher, MIXER)
