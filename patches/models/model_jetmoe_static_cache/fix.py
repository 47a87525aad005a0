"""model-jetmoe-static-cache: JetMoE with a static cache is silently wrong from the first generated token.

The defect. ``JetMoeModel.forward`` computes ``cache_position`` (or takes generate()'s) but calls its decoder
layers without it, so every ``JetMoeAttention`` hands the cache ``cache_kwargs={"cache_position": None}``. A
dynamic cache appends and does not care; a static cache writes the keys where ``cache_position`` says, and with
None it writes them at slots ``0 .. n-1`` (``StaticLayer.update`` falls back to ``torch.arange(n)``). The prompt
lands in the right slots by chance; every generated token's keys overwrite slot 0, the first prompt token, and
slot ``n`` stays empty, so ``generate(cache_implementation="static")`` is wrong from the first generated token on
(0.0107 on the tiny model). Releases before 4.54 refuse a static cache for JetMoE ("This model does not support
`cache_implementation='static'`"): loud, not this defect. 5.0.0 passes ``cache_position`` to the layers.

Detection. A tiny JetMoE, a 10-token prompt and 6 greedy tokens with ``cache_implementation="static"``: every
step's logits against a no-cache forward of the final sequence.

Correction. The model's forward is wrapped to note, for the duration of the call (a context variable: this thread or
task only), the ``cache_position`` of the call -- the caller's, or, for a caller's cache object given without one,
the one the forward itself computes (cache length + ``arange``), passed on explicitly; ``JetMoeBlock.forward`` is
wrapped to hand that position to its attention when it is called without one (``hf_genfix.toolkit.positions``,
shared with ``decoding-gpt-neox-static-cache``), which is what 5.0.0 does. A dynamic cache ignores the position, so
its output is bitwise upstream's; without a cache nothing changes.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments
from hf_genfix.toolkit.positions import PositionRelay

MODEL = "transformers.models.jetmoe.modeling_jetmoe:JetMoeModel.forward"
BLOCK = "transformers.models.jetmoe.modeling_jetmoe:JetMoeBlock.forward"

_relay = PositionRelay("hf_genfix_jetmoe_cache_position")


def install(patcher: Any) -> None:
    patcher.require(MODEL, "past_key_values", "cache_position")
    patcher.require(BLOCK, "cache_position")
    patcher.wrap(MODEL, model_forward)
    patcher.wrap(BLOCK, _relay.inner)  # the layer gets the model call's position when called without one


def model_forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    """Note the call's cache_position for its layers (computed as upstream does when the caller gave none)."""
    from transformers.cache_utils import Cache

    try:
        call = bound_arguments(wrapped, args, kwargs)
    except TypeError:
        return wrapped(*args, **kwargs)  # upstream raises its own error for a call it does not take
    position, cache = call.get("cache_position"), call.get("past_key_values")
    stated = "cache_position" in call and "cache_position" not in kwargs  # positionally, even as None
    if position is None and isinstance(cache, Cache) and not stated:
        tokens = call.get("input_ids") if call.get("inputs_embeds") is None else call["inputs_embeds"]
        if tokens is not None:
            import torch

            seen = cache.get_seq_length()
            position = torch.arange(seen, seen + tokens.shape[1], device=tokens.device)
            kwargs = dict(kwargs, cache_position=position)  # what the forward computes itself, passed on
    return _relay.around(position, wrapped, args, kwargs)
