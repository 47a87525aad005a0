"""decoding-gpt-neox-static-cache: GPT-NeoX with a static cache raises on 4.45 - 4.46 (eager attention).

The defect. 4.45 moved GPT-NeoX to ``Cache`` objects and declared static-cache support, but the eager
``GPTNeoXAttention.forward`` does not hand its ``cache_position`` on to ``_attn_projections_and_rope`` (the SDPA
and flash-attention forwards do). ``StaticCache.update`` then takes its "no cache_position" branch and copies
the step's keys over the whole pre-allocated cache: ``RuntimeError: The size of tensor a (16) must match the
size of tensor b (10) at non-singleton dimension 2`` for a 10-token prompt and a 16-slot cache -- every
``generate(cache_implementation="static")`` of an eager GPT-NeoX (Pythia, GPT-NeoX-20B, ...), and the SDPA
forward too when it falls back to eager (``output_attentions=True``). 4.44 refused static caches for GPT-NeoX
("does not support cache_implementation='static'"); 4.47.0 rewrote the attention and passes the position.

Detection. A tiny GPT-NeoX (eager), rows of 10 and 6 tokens left-padded, ``cache_implementation="static"``,
6 new tokens: every row and step against a no-cache forward of the unpadded row.

Correction. ``GPTNeoXAttention.forward`` is wrapped to remember the ``cache_position`` it was given (a context
variable, so nested and concurrent calls each see their own), and ``_attn_projections_and_rope`` is wrapped to
receive it when its caller left it out -- the argument the release forgot, nothing else. A dynamic cache
ignores ``cache_position``, so only static caches change (from an exception to the right answer).
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments
from hf_genfix.toolkit.positions import PositionRelay

MODULE = "transformers.models.gpt_neox.modeling_gpt_neox"
FORWARD = f"{MODULE}:GPTNeoXAttention.forward"
PROJECTIONS = f"{MODULE}:GPTNeoXAttention._attn_projections_and_rope"

_relay = PositionRelay("hf_genfix_gpt_neox_cache_position")


def install(patcher: Any) -> None:
    patcher.require(FORWARD, "layer_past", "cache_position")
    patcher.require(PROJECTIONS, "layer_past", "cache_position")
    patcher.wrap(FORWARD, _forward)
    patcher.wrap(PROJECTIONS, _relay.inner)


def _forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    return _relay.around(bound_arguments(wrapped, args, kwargs).get("cache_position"), wrapped, args, kwargs)
