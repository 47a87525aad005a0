"""model-mamba2-chunk-state: on 5.4-5.12 Mamba-2's mixer sends every call after a cached state down its one-token
path, so several tokens after a cache (a second turn from generate()'s returned cache, a reused prefix cache, a
chunk fed through forward) are silently wrong (see the manifest for the range).

The defect. ``Mamba2Mixer.torch_forward`` (and ``cuda_kernels_forward``) on 5.5-5.12 branch on
``cache_params.has_previous_state(layer_idx)`` alone (5.4 on its own ``Mamba2Cache``'s ``has_previous_state`` flag;
5.0-5.3 on ``cache_position[0] > 0``, which generate() keeps right): with a state, the input is taken as one decoding
step (the convolution window rolled by the whole chunk, one SSM update with the chunk's time steps), whatever its
length. A chunk of several tokens after a state comes out wrong from its first token (3.59 on the continuation
probe's loud tiny Mamba-2, with model-mamba2-continuation's slicing; that patch alone cannot correct the second turn
here). 5.13.0 keyed the one-token path on ``seq_len == 1`` and scans a chunk from the cached states
(``initial_states``).

Detection. ``probe()``: a first turn generated, then a second turn of three more tokens continuing from the
returned cache, every step against a no-cache forward of the conversation (the loud tiny Mamba-2 of the
continuation probes). On these releases the second turn also needs model-mamba2-continuation (generate() feeds the
whole conversation again on top of the state): the probe runs with the catalog's other patches as installed.

Correction. The models family's ``ssm_continuation.split_after_state`` (Jamba's, Zamba's, Bamba's): a chunk after
this layer's state goes through upstream's own one-token path, one token at a time. A prompt (no state yet), one
token, and a chunk whose mask has zeros are upstream's. 5.4's own ``Mamba2Cache`` carries one flag for every layer,
which ``has_state`` reads as it is (5.4 was on file in open-findings.json until session 27, when the continuation's
slicing learnt that cache class: with both patches the second turn is right there).
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.ssm_continuation import SPLIT_NOT_BITWISE, install_continuation

MIXER = "transformers.models.mamba2.modeling_mamba2:Mamba2Mixer.forward"
# The one-token path token by token, where upstream takes the chunk for one step: other float operations.
NOT_BITWISE = SPLIT_NOT_BITWISE


def install(patcher: Any) -> None:
    install_continuation(patcher, MIXER)
