"""model-olmo-hybrid-chunk-state: OlmoHybrid's gated DeltaNet mixer convolves several tokens after a cache without the
cached conv window: a second turn from generate()'s returned cache, a reused prefix cache and a chunk after a cache are
silently wrong (5.3.0, where the model first ships, to 5.6.2).

The defect. ``OlmoHybridGatedDeltaNet.forward`` takes its decoding path (``use_precomputed``) only for one token. A
chunk after a state goes through the prefill path: the recurrent state is continued (``initial_state`` is the cached
one), but the three short convolutions (q, k, v) pad the chunk with zeros instead of the cached window, so the first
``conv_kernel_size - 1`` tokens of every continuation are computed from a wrong context. Found by the sweep's
second-turn scenario on 5.6.0 (3.89); the probe's loud model is 6.47 off at the second turn's first token. 5.7.0
prepends the cached window (its ``ShortConvolution`` reads ``use_precomputed`` for chunks too).

Detection. ``probe()``: a first turn generated, then a second turn of three more tokens continuing from the returned
cache, every step against a no-cache forward of the conversation (the loud tiny OlmoHybrid of the continuation probes).

Correction. The models family's ``ssm_continuation.split_after_state`` (Jamba's, Bamba's, Mamba's): a chunk after
this layer's state goes through upstream's one-token path, one token at a time. Its cache's ``has_previous_state()``
takes no layer (the last linear layer holds a state), which ``has_state`` reads as such. A prompt, one token and a
chunk whose mask has zeros are upstream's.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.ssm_continuation import SPLIT_NOT_BITWISE, install_continuation

MIXER = "transformers.models.olmo_hybrid.modeling_olmo_hybrid:OlmoHybridGatedDeltaNet.forward"
# The one-token path token by token, where upstream runs the chunk kernel: other float operations.
NOT_BITWISE = SPLIT_NOT_BITWISE


def install(patcher: Any) -> None:
    install_continuation(patcher, MIXER)
