"""model-jamba-previous-state: on 4.54.0-4.55.2 Jamba's cache never says it holds a state, so every decoding step after the
prompt takes the mixer's prompt path: a plain cached generate() is silently wrong from its second token.

The defect. ``JambaModel.forward`` sets ``has_previous_state`` only ``if past_key_values``, and 4.54.0's
``HybridMambaAttentionDynamicCache`` (a ``Cache`` of empty ``DynamicLayer`` lists) is falsy: Jamba's mixer convolves each decoding step's token without the cached window. Loud tiny
Jamba: 6.51 at generated step 1 (4.54.0, 4.55.2); 4.53.3 and 4.55.3 are right. What the three hybrids share is
in the models family's ``hybrid_previous_state.py``.

Detection. ``probe()``: a plain cached generate() of one row and of a left-padded batch, every step against a
no-cache forward of each unpadded row.

Correction. ``hybrid_previous_state``: after the backbone's forward, the flag is set where upstream's line meant
to set it and only its truthiness test stopped it.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared import hybrid_previous_state

BACKBONE = "transformers.models.jamba.modeling_jamba:JambaModel.forward"


def install(patcher: Any) -> None:
    hybrid_previous_state.install(patcher, BACKBONE, __name__)
