"""model-jamba-previous-state / model-bamba-previous-state / model-granitemoehybrid-previous-state: on 4.54.0-4.55.2
a hybrid Mamba model's cache never says it holds a state, so every decoding step after the prompt runs the mixer's
prompt path (each fix's docstring has its range).

The defect they share. The backbone ends its forward with upstream's

    if past_key_values and not past_key_values.has_previous_state:
        past_key_values.has_previous_state = True

written when the model's ``HybridMambaAttentionDynamicCache`` kept its own lists and ``len(cache)`` was the number
of layers (truthy). 4.54.0 made that class a ``Cache(layer_classes=DynamicLayer)`` whose ``layers`` stay empty (its
``update`` writes its own ``key_cache`` lists), so ``bool(cache)`` is ``len(cache.layers) == 0``: False, and the flag
is never set. The mixers take their one-token path only when the flag is set: every later step convolves its token
without the cached window (Jamba) or rescans without the cached state (the Mamba-2 mixers of Bamba and
GraniteMoeHybrid). A plain cached ``generate()`` is wrong from its second generated token (the loud tiny models:
Jamba 6.51, Bamba 7.34, GraniteMoeHybrid 4.15 against a no-cache forward); 4.53.3 and 4.55.3 (whose class is no
longer built on ``layer_classes``) give 6e-06.

Correction. After the backbone's forward, the flag is set where upstream's own line meant to set it and its
truthiness test alone stopped it: a cache given to (or made by) the forward whose ``has_previous_state`` is the bool
``False`` while ``bool(cache)`` is False. Nothing else of the forward changes; a cache that is truthy (upstream set
the flag itself) or of another class is left alone.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments, hidden_from_warnings, recorder


def install(patcher: Any, backbone: str, patch_module: str) -> None:
    """Wrap ``backbone`` (``module:Model.forward``); ``patch_module`` is the fix's ``__name__`` (its recorder)."""
    patcher.require(backbone, "past_key_values")
    record = recorder(patch_module)
    patcher.wrap(backbone, lambda wrapped, instance, args, kwargs: _forward(record, wrapped, args, kwargs))


@hidden_from_warnings
def _forward(record: Any, wrapped: Any, args: tuple, kwargs: dict) -> Any:
    out = wrapped(*args, **kwargs)
    try:
        cache = bound_arguments(wrapped, args, kwargs).get("past_key_values")
    except TypeError:  # upstream accepted a call we cannot bind: leave it be
        return out
    if cache is None:
        cache = out.get("past_key_values") if isinstance(out, dict) else None
    if cache is None or getattr(cache, "has_previous_state", None) is not False or bool(cache):
        return out
    if record.on:
        record.seen()
        record.changed("%s: has_previous_state set after the forward (its empty layers made it falsy)",
                       type(cache).__name__)
    cache.has_previous_state = True
    return out
