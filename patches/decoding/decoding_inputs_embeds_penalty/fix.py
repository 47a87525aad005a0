"""decoding-inputs-embeds-penalty: with ``inputs_embeds`` alone, a left-padded row's first generated tokens escape
``repetition_penalty``.

The defect. 5.23.0 stopped ``repetition_penalty`` from penalising left padding: ``_get_logits_processor`` computes
each row's number of leading zeros in the attention mask and hands it to ``RepetitionPenaltyLogitsProcessor`` as
``prompt_ignore_length``, so that the processor skips that many ids at the start of each row. That is right when
the ids start with the padded prompt. With ``generate(inputs_embeds=..., attention_mask=...)`` and no
``input_ids`` (a decoder-only model), the ids the processors see hold no prompt: they are the row's own generated
tokens, from the first step on. So a row with ``p`` pads has its first ``p`` generated tokens skipped, and a
token it repeats is not penalised where the same row alone (or unpadded) is: other scores, then other tokens.
transformers' own warning states the contract ("will apply the penalty only to newly generated tokens, not to the
prompt"). Measured: 4.46.3 - 5.22.2 right (no ``prompt_ignore_length``), 5.23.0 and 5.24.0 wrong.

Detection. A tiny Llama, a left-padded batch of 2 prompts (the short one padded by 6) given as ``inputs_embeds``
with the mask, greedy with ``repetition_penalty``: every step's processed scores (``output_scores``) must be the
row's own no-cache logits with the penalty applied, by its definition, over the tokens that row generated before
the step.

Correction. ``GenerationMixin._get_logits_processor`` is wrapped: for a decoder-only model called with no prompt
ids (``input_ids_seq_length == 0``, the case upstream's warning names), the repetition penalty it built itself
skips nothing (``prompt_ignore_length`` of that call's processor set to ``None``). The processor is a new object
per ``generate()`` call, so no other call sees the change. Nothing else changes: prompt ids given (the padding
lengths are right there), an encoder-decoder model (its decoder ids start with the decoder start, not with the
encoder's padding), a length not given (``None``: a direct caller, left to upstream), a processor the caller
passed in ``logits_processor=``.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments, recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

FACTORY = "transformers.generation.utils:GenerationMixin._get_logits_processor"
PENALTY = "RepetitionPenaltyLogitsProcessor"


def install(patcher: Any) -> None:
    patcher.require(FACTORY, "generation_config", "input_ids_seq_length", "logits_processor")
    patcher.wrap(FACTORY, _get_logits_processor)


def _get_logits_processor(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    processors = wrapped(*args, **kwargs)
    if record.on:
        record.seen()
    if getattr(getattr(instance, "config", None), "is_encoder_decoder", False):
        record.unchanged()
        return processors
    bound = bound_arguments(wrapped, args, kwargs)
    if bound.get("input_ids_seq_length") != 0:  # prompt ids given (or not said): upstream's lengths stand
        record.unchanged()
        return processors
    theirs = {id(p) for p in (bound.get("logits_processor") or ())}
    changed = False
    for processor in processors:
        if type(processor).__name__ != PENALTY or id(processor) in theirs:
            continue
        skip = getattr(processor, "prompt_ignore_length", None)
        if isinstance(skip, torch.Tensor) and bool((skip != 0).any()):
            processor.prompt_ignore_length = None  # no prompt ids to skip: every id is a generated token
            changed = True
            if record.on:
                record.changed("repetition_penalty with inputs_embeds alone: over every generated token (%d padded "
                                "rows skipped their first ones)", int((skip != 0).sum()))
    if not changed:
        record.unchanged()  # no repetition penalty of generate()'s own that skips a prompt
    return processors
