"""model-granitemoehybrid-chunk-state: GraniteMoeHybrid's Mamba-2 layers forget their state on a chunk after a cache.

The defect. ``GraniteMoeHybridMambaLayer`` is Bamba's mixer under another name (``model-bamba-chunk-state`` has the
mechanism): several tokens after a cache that holds the layer's state take the prompt path, which convolves
behind zeros and scans from a zero state. A second turn from generate()'s returned cache, a reused prefix cache, a
chunk after a cache and chunked prefill are silently wrong: 4.71 on the continuation probes' loud tiny model, and
on the sweep's (session 16, 5.12.0) a reused prefix cache 4.93, a chunk 2.57, chunked prefill 1.09. From the
model's first release (4.52.0) to 5.12.1; 5.13.0 continues both states from the cache.

Detection. ``probe()``: a second turn of three tokens continuing generate()'s returned cache, every step against
a no-cache forward of the conversation.

Correction. ``ssm_continuation.split_after_state``, as for Bamba, Jamba and Zamba: such a chunk goes through
upstream's one-token path a token at a time; a chunk with pads among its tokens stays upstream's.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.ssm_continuation import SPLIT_NOT_BITWISE, install_continuation

MIXER = "transformers.models.granitemoehybrid.modeling_granitemoehybrid:GraniteMoeHybridMambaLayer.forward"
# The one-token path token by token, where upstream scans a chunk from a zero state: other float operations.
NOT_BITWISE = SPLIT_NOT_BITWISE


def install(patcher: Any) -> None:
    install_continuation(patcher, MIXER)
