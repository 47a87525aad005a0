"""drafting-mtp-init: on 5.18.0 and 5.19.0 Gemma-4 multi-token-prediction decoding raises a TypeError on every call.

The defect. ``generate(assistant_model=<a Gemma-4 assistant>)`` (MTP drafting) builds its candidate generator
with ``SinglePositionMultiTokenCandidateGenerator(assistant_model=..., target_model_input_embeddings=...,
generation_config=...)``: from 5.18.0 generate() no longer passes ``input_ids`` and ``model_kwargs``, but the
constructor still declares both as required (it no longer reads either), so every MTP call fails before decoding
starts: ``TypeError: SinglePositionMultiTokenCandidateGenerator.__init__() missing 2 required positional
arguments: 'input_ids' and 'model_kwargs'``, window or not, any prompt. Measured: 5.18.0 and 5.19.0 (the only
5.19 release) fail; 5.17.0 (which still passes both), 5.20.0, 5.20.1 and 5.20.2 pass (5.20.0 makes both
optional, ``None`` by default).

Detection. A tiny Gemma-4 text model (KV-shared layout) and a tiny Gemma-4 assistant drafting 3 tokens, 12 + 8
tokens, inside the window: tokens equal to plain greedy and logits equal to a no-cache forward
(``oracles.sliding.check_same_as_greedy``), the assistant having drafted.

Correction. ``SinglePositionMultiTokenCandidateGenerator.__init__`` is wrapped in place: where the caller passes
neither ``input_ids`` nor ``model_kwargs``, they are given 5.20's default, ``None``; the body never reads them.
"""

from __future__ import annotations

import inspect
from typing import Any

INIT = "transformers.generation.candidate_generator:SinglePositionMultiTokenCandidateGenerator.__init__"


def install(patcher: Any) -> None:
    patcher.require(INIT, "input_ids", "model_kwargs")
    patcher.wrap(INIT, _init)


def _init(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    given = inspect.signature(wrapped).bind_partial(*args, **kwargs).arguments
    for name in ("input_ids", "model_kwargs"):
        if name not in given:
            kwargs = {**kwargs, name: None}
    return wrapped(*args, **kwargs)
