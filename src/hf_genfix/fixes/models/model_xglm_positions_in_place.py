"""model-xglm-positions-in-place: on 5.2.0, XGLM without a cache drifts by 2 positions a step.

The defect. ``XGLMSinusoidalPositionalEmbedding.forward`` adds its offset (2) to the ``position_ids`` it is given
in place (``position_ids += self.offset``), so it changes the caller's tensor. Up to 5.1.0 ``generate()`` passed
XGLM no positions (its forward made its own, which nobody else sees). 5.2.0's ``generate()`` computes
``position_ids`` and keeps them between steps; without a cache (``use_cache=False``: what beam search compares
against, or a model used without one) the whole tensor is passed to the forward each step, which moves it by 2,
and the next step's positions are built from the moved ones: from the second generated token on every position is
off, silently (0.24 on a tiny XGLM, greedy, 6 new tokens; beam search with and without a cache pick other
tokens). With a cache the forward gets a cut copy and the drift does not reach the next step. 5.3.0 adds the
offset out of place (``position_ids = position_ids + self.offset``).

Detection. ``probe()``: a tiny XGLM, greedy ``generate(use_cache=False)``, 6 new tokens, every step against a
no-cache forward of the row.

Correction. ``XGLMSinusoidalPositionalEmbedding.forward`` is wrapped: it gets a copy of the ``position_ids`` it is
given, so the caller's tensor stays as it was (the embedding computed is the same).
"""

from __future__ import annotations

from typing import Any

EMBEDDING = "transformers.models.xglm.modeling_xglm:XGLMSinusoidalPositionalEmbedding.forward"


def install(patcher: Any) -> None:
    patcher.require(EMBEDDING, "position_ids")
    patcher.wrap(EMBEDDING, _on_a_copy)


def _on_a_copy(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    if args and torch.is_tensor(args[0]):
        args = (args[0].clone(), *args[1:])
    elif torch.is_tensor(kwargs.get("position_ids")):
        kwargs = {**kwargs, "position_ids": kwargs["position_ids"].clone()}
    return wrapped(*args, **kwargs)


def probe() -> dict:
    from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad
    from hf_genfix.oracles.sweep import build

    model = build("xglm", seed=0)
    rows = [[47, 117, 61, 13, 91, 7, 55, 6, 125]]
    run = generate_steps(model, *left_pad(rows), max_new_tokens=6, use_cache=False)
    return check_rows_against_reference(model, rows, run, "xglm: greedy generate(use_cache=False) vs no-cache forward")
