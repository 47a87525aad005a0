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

from hf_genfix import _record
from hf_genfix.fixes.sliding_window.sliding_window_image_mask import bound_arguments

FACTORY = "transformers.generation.utils:GenerationMixin._get_logits_processor"
PENALTY = "RepetitionPenaltyLogitsProcessor"
PENALTY_VALUE = 1.8


def install(patcher: Any) -> None:
    patcher.require(FACTORY, "generation_config", "input_ids_seq_length", "logits_processor")
    patcher.wrap(FACTORY, _get_logits_processor)


def _get_logits_processor(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    processors = wrapped(*args, **kwargs)
    if _record.on:
        _record.seen("decoding-inputs-embeds-penalty")
    if getattr(getattr(instance, "config", None), "is_encoder_decoder", False):
        return processors
    bound = bound_arguments(wrapped, args, kwargs)
    if bound.get("input_ids_seq_length") != 0:  # prompt ids given (or not said): upstream's lengths stand
        return processors
    theirs = {id(p) for p in (bound.get("logits_processor") or ())}
    for processor in processors:
        if type(processor).__name__ != PENALTY or id(processor) in theirs:
            continue
        skip = getattr(processor, "prompt_ignore_length", None)
        if isinstance(skip, torch.Tensor) and bool((skip != 0).any()):
            processor.prompt_ignore_length = None  # no prompt ids to skip: every id is a generated token
            if _record.on:
                _record.changed("decoding-inputs-embeds-penalty",
                                "repetition_penalty with inputs_embeds alone: over every generated token (%d padded "
                                "rows skipped their first ones)", int((skip != 0).sum()))
    return processors


def probe() -> dict:
    import torch

    from hf_genfix.oracles import DefectObserved, reference_logits, tiny_model
    from hf_genfix.oracles.generation import generate_steps, left_pad
    from hf_genfix.oracles.precision import tolerance
    from hf_genfix.oracles.reference import max_diff
    from hf_genfix.oracles.tiny import calibrate

    model = calibrate(tiny_model("llama"))  # logits of std ~1: the penalty moves a score by O(1)
    generator = torch.Generator().manual_seed(3)
    rows = [torch.randint(2, 128, (n,), generator=generator).tolist() for n in (9, 3)]
    ids, mask = left_pad(rows)
    with torch.no_grad():
        embeds = model.get_input_embeddings()(ids)
    run = generate_steps(model, None, mask, max_new_tokens=8, inputs_embeds=embeds, pad_token_id=0,
                         eos_token_id=None, repetition_penalty=PENALTY_VALUE, output_scores=True,
                         output_logits=False)
    worst, steps = 0.0, 0
    for b, row in enumerate(rows):
        new = run.new_tokens(b)
        reference = reference_logits(model, row + new)
        for t in range(len(new)):
            expected = reference[len(row) - 1 + t].float().clone()
            for token in set(new[:t]):  # the penalty by its definition, over this row's generated tokens
                value = expected[token]
                expected[token] = value / PENALTY_VALUE if value > 0 else value * PENALTY_VALUE
            diff = max_diff(run.step_logits[t][b].float(), expected)
            worst, steps = max(worst, diff), steps + 1
            if not diff <= tolerance():
                raise DefectObserved(
                    f"generate(inputs_embeds=, repetition_penalty={PENALTY_VALUE}) of a left-padded batch: row {b} "
                    f"({len(ids[0]) - len(row)} pads), step {t}: scores {diff:.3g} off the penalty over the row's "
                    "generated tokens", max_logit_diff=diff, row=b, step=t)
    return {"max_logit_diff": worst, "steps": steps}
