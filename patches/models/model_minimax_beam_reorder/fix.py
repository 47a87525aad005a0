"""model-minimax-beam-reorder: beam search with MiniMax continues each beam from another beam's lightning-attention
state (silently wrong tokens), on every release that has MiniMax (4.53.0 to 5.24.0 at least).

The defect. MiniMax alternates softmax attention layers, whose keys and values a ``DynamicCache`` keeps, with
lightning (linear) attention layers, whose running state ``MiniMaxCache`` keeps beside them in ``linear_cache``.
After every beam-search step ``generate()`` calls ``cache.reorder_cache(beam_idx)`` so that each beam keeps its
own past. ``MiniMaxCache`` reorders its linear states in ``batch_select_indices`` and ``batch_repeat_interleave``,
but not there: it inherits ``DynamicCache.reorder_cache``, which reorders the keys and values only. From the
first reordering on, a beam reads its softmax layers' past from itself and its linear layers' past from another
beam, and the beams' scores and tokens are not those of the model. ``use_cache=False`` recomputes every state from
the tokens and is right.

Detection. The sweep's ``beam-loud`` scenario on the tiny MiniMax with loud weights (std 0.3): beam search with
3 beams and 6 new tokens, with the cache and without it. The tokens part at step 3 without the patch. With tame
weights the same defect moves the beam scores so little that the beams often stay the same: the plain ``beam``
scenario caught it on 4.57.6 only.

Correction. ``MiniMaxCache.reorder_cache`` is wrapped. Upstream's reordering of the keys and values runs first,
then each linear state that is a tensor is reordered along its batch dimension by ``beam_idx``, as
``batch_select_indices`` does. If a release defines ``reorder_cache`` on ``MiniMaxCache`` itself (the fix
upstream would write), the patch drifts and stays off.
"""

from __future__ import annotations

from typing import Any

from hf_genfix import Drift
from hf_genfix.toolkit import bound_arguments, recorder

CACHE = "transformers.models.minimax.modeling_minimax:MiniMaxCache"
record = recorder(__name__)


def install(patcher: Any) -> None:
    cls = patcher.require(CACHE)
    if "reorder_cache" in vars(cls):
        raise Drift("MiniMaxCache defines its own reorder_cache: not the inherited one this patch completes")
    if not hasattr(cls, "get_linear_cache") or not hasattr(cls, "batch_select_indices"):
        raise Drift("MiniMaxCache keeps no linear_cache here: not the cache fixed here")
    patcher.require(f"{CACHE}.reorder_cache", "beam_idx")
    patcher.wrap(f"{CACHE}.reorder_cache", _reorder_cache)


def _reorder_cache(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    result = wrapped(*args, **kwargs)
    beam_idx = bound_arguments(wrapped, args, kwargs).get("beam_idx")
    states = getattr(instance, "linear_cache", None)
    if not isinstance(beam_idx, torch.Tensor) or not isinstance(states, list):
        return result
    moved = 0
    for i, state in enumerate(states):
        # Softmax layers hold [] here; a lightning layer's state is (batch * beams, heads, dim, dim).
        if isinstance(state, torch.Tensor) and state.dim() > 0 and state.shape[0] == beam_idx.shape[0]:
            states[i] = state.index_select(0, beam_idx.to(state.device))
            moved += 1
    if record.on and moved:
        record.changed("reordered %d lightning-attention states with the keys and values", moved)
    return result
