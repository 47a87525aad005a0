"""decoding-inputs-embeds-max-length: on 4.48 a prompt given as embeddings alone no longer counts in max_length.

The defect. ``max_length`` is the length of the whole sequence, prompt included (transformers' own rule since
huggingface/transformers#28994). When a decoder-only model gets its prompt as ``inputs_embeds`` and no
``input_ids``, the ids generate() returns hold the new tokens only, so ``_prepare_generated_length`` subtracts the
prompt's length from ``max_length``. 4.48.0 added ``input_ids_length != 0`` to
that branch, and an embeddings-only call has exactly 0 input ids: the subtraction never happens and such a call
generates ``max_length`` new tokens -- 10 instead of 4 for ``max_length=10`` after a 6-token prompt -- where the
same call with ``input_ids`` stops at ``max_length``. Output lengths, stopping and every
length budget built on ``max_length`` silently differ between the two ways of giving the same prompt. 4.49.0 drops
the condition again.

Detection. A tiny Llama, a 6-token prompt, greedy: ``generate(inputs_embeds=..., max_length=10)`` and ``=12``,
against the same calls with ``input_ids``: the same new tokens and the same per-step logits.

Correction. Around ``_prepare_generated_length``: for exactly the call the condition shut out -- a decoder-only
model, the prompt as embeddings with no input ids, a ``max_length`` the caller set and no ``max_new_tokens`` --
``max_length`` becomes the value it had before the call minus the prompt's length, as 4.47 and 4.49 compute it.
The default length is left to upstream: with ``input_ids`` it means 20 new tokens, and 4.48's embeddings-only call
gives 20 new tokens too (4.47 and 4.49 give 20 in all there: that is their choice, not this defect). ``min_length`` was never affected
(its branch kept the old condition). Every other call goes to upstream unchanged.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments

LENGTH = "transformers.generation.utils:GenerationMixin._prepare_generated_length"


def install(patcher: Any) -> None:
    patcher.require(LENGTH, "generation_config", "has_default_max_length", "model_input_name", "input_ids_length",
                    "inputs_tensor")
    patcher.wrap(LENGTH, prepare_generated_length)


def prepare_generated_length(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    try:
        call = bound_arguments(wrapped, args, kwargs)
    except TypeError:
        return wrapped(*args, **kwargs)  # upstream raises its own error for a call it does not take
    config, embeds = call.get("generation_config"), call.get("inputs_tensor")
    shut_out = (
        call.get("model_input_name") == "inputs_embeds"
        and call.get("input_ids_length") == 0
        and getattr(embeds, "ndim", 0) >= 2 and embeds.shape[1] != 0
        and not call.get("has_default_max_length", True)
        and getattr(config, "max_new_tokens", None) is None
        and getattr(config, "max_length", None) is not None
        and not getattr(instance.config, "is_encoder_decoder", False)
    )
    before = config.max_length if shut_out else None
    result = wrapped(*args, **kwargs)
    if shut_out:
        result.max_length = before - embeds.shape[1]
    return result
