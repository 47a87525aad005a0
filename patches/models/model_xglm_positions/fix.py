"""model-xglm-positions: XGLM adds its position offset to the caller's ``position_ids`` in place.

The defect. ``XGLMSinusoidalPositionalEmbedding.forward`` begins with ``position_ids += self.offset`` (the
fairseq offset of 2): it writes into the tensor it was given. That tensor is the caller's: a hand-written loop
that passes the same ``position_ids`` to two forwards gets the second one two positions further, and on 5.2
``generate(use_cache=False)`` meets it on every step: generate keeps the positions in ``model_kwargs``, hands the
same tensor to the forward, and grows the next step's positions from the shifted ones, so every step after the
first places the whole sequence at wrong positions (silently wrong logits and tokens; step 0 is right). 5.0 and
5.1 rebuild the positions every step, and cached generation hands the forward a fresh slice: right there. The
line is in every release of the matrix up to 5.2.0; 5.3.0 computes ``position_ids = position_ids + self.offset``
(out of place). No upstream issue found.

Detection. A tiny XGLM: one forward given ``position_ids`` must leave them as they were, and greedy
``generate(use_cache=False)`` on two rows must match, step by step, a no-cache forward of each row's final sequence.

Correction. The embedding's forward is given a copy of ``position_ids``: the same arithmetic on the same values
(bitwise upstream's logits wherever upstream was right), and the caller's tensor stays the caller's.
"""

from __future__ import annotations

from typing import Any

TARGET = "transformers.models.xglm.modeling_xglm:XGLMSinusoidalPositionalEmbedding.forward"


def install(patcher: Any) -> None:
    patcher.require(TARGET, "position_ids")
    patcher.wrap(TARGET, _forward_on_a_copy)


def _forward_on_a_copy(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    if args and hasattr(args[0], "clone"):
        args = (args[0].clone(), *args[1:])
    elif hasattr(kwargs.get("position_ids"), "clone"):
        kwargs = dict(kwargs, position_ids=kwargs["position_ids"].clone())
    return wrapped(*args, **kwargs)
