"""model-mamba2-continuation: Mamba-2's share of Mamba's continuation defect (``model-mamba-continuation``): a second
turn from generate()'s returned cache and a reused prefix cache are silently wrong, because generate() cannot slice
the ids by a cache of recurrent states (it has no length) and feeds the whole conversation again on top of the
state. From 5.13 Mamba-2's mixer itself is right: its chunk path scans from the cached state (``initial_states``),
and a 5-token chunk after a cache matches a no-cache forward (1.4e-06 on 5.24.0), so it is not wrapped here (only the
backbone, which counts the columns fed into the cache, and prepare_inputs_for_generation, which slices by that
count). On 5.4-5.12 the mixer takes a chunk after a state for one step: ``model-mamba2-chunk-state`` corrects that,
and this patch's slicing needs it there. 5.4 still has Mamba-2's own ``Mamba2Cache`` (no cache layers to read
"recurrent only" from): the fix names that class, so its continuations are sliced as 5.5's generic cache's are;
5.0-5.3 are right upstream (their generate() hands the mixer a cache_position to branch on).
Measured on the hunt's loud tiny Mamba-2 (8 heads of 8, state 8, chunks of 4, std 0.3) on 5.24.0: second turn
0.475, reused prefix cache 0.354 without the patch, 1.9e-06 and 8.8e-06 with. Its own manifest because its own
module.
"""

from __future__ import annotations

import importlib
from typing import Any

from hf_genfix._patches.models.shared.ssm_continuation import install_continuation

MODULE = "transformers.models.mamba2.modeling_mamba2"


def install(patcher: Any) -> None:
    # 5.4 (and 4.x) keep Mamba-2's own cache class, conv_states and ssm_states only: recurrent, as 5.5's linear
    # layers are. 5.5 dropped it for the generic cache.
    own_cache = getattr(importlib.import_module(MODULE), "Mamba2Cache", None)
    install_continuation(patcher, None, f"{MODULE}:Mamba2Model.forward",
                         f"{MODULE}:Mamba2ForCausalLM.prepare_inputs_for_generation", own_cache=own_cache)
