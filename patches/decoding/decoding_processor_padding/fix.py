"""decoding-processor-padding: logits processors that read the prompt count a left-padded row's padding as prompt.

The defect. ``generate()`` hands every logits processor the whole ``input_ids`` tensor, left padding included,
and several processors read the prompt's tokens or its length from it:

- ``repetition_penalty`` penalises the pad token (with pad == eos, the usual Llama / GPT-2 setting: the eos
  token, so a padded row ends later than it does alone); 5.23.0 passes the padding lengths from the attention
  mask (``prompt_ignore_length``), 5.22.2 and older do not;
- ``encoder_repetition_penalty`` (decoder-only models use the prompt as its "encoder" ids) favours the pad token;
- ``no_repeat_ngram_size`` bans n-grams made of padding (n = 1 with pad == eos: eos is banned for every padded
  row);
- watermarking seeds its green list from the last ``context_width`` tokens, padding included, where the row
  alone is too short to be seeded.

Each padded row then gets other scores, and so other tokens or another stop, than the same row alone. Measured on
4.46.3 - 5.24.0 (repetition_penalty up to 5.22.2).

Detection. A tiny Llama, three prompts of 7, 3 and 10 tokens left-padded with the eos token (pad == eos), greedy,
each of the options above: the processed scores (``output_scores``) of every row and step must be those of the
row generated alone (``oracles.sweep.processors.check_rows``).

Correction. ``GenerationMixin._get_logits_processor`` is wrapped: for a decoder-only model given token ids and a
left-padded attention mask (each row zeros, then ones), the processors it built of the kinds above are given the
number of pads of each row; their ``__call__`` is wrapped to call the processor once per row, on that row's ids
without its padding (and, for the encoder repetition penalty, that row's prompt without padding), which is what
the row alone gets. Nothing changes where no row is padded, where the mask is not a left padding (hf_genfix's
``right-padding`` realigns a right-padded batch first), for processors a caller passed in ``logits_processor=``,
for a repetition penalty that already skips the padding (5.23+), and for every other processor (those that read
no ids, and ``prefix_allowed_tokens_fn``, whose contract is the batch index). ``min_length`` is left as it is:
like ``max_length`` it counts the padded width by design (``min_new_tokens`` is implemented as ``min_length`` =
padded width + ``min_new_tokens``, so a per-row length there would break it).
"""

from __future__ import annotations

import copy
from typing import Any

from hf_genfix.toolkit import bound_arguments, recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

FACTORY = "transformers.generation.utils:GenerationMixin._get_logits_processor"
MODULE = "transformers.generation.logits_process"
# The processors that read the prompt part of input_ids (its tokens or its length).
ROW_PROCESSORS = (
    "RepetitionPenaltyLogitsProcessor",
    "EncoderRepetitionPenaltyLogitsProcessor",
    "NoRepeatNGramLogitsProcessor",
    "WatermarkLogitsProcessor",
)
# Set on the processors generate() built for one call: (each row's number of left pads, the prompt's width, the eos
# ids).
PADS = "_hf_genfix_pads"


def install(patcher: Any) -> None:
    patcher.require(FACTORY, "generation_config", "encoder_input_ids", "logits_processor", "model_kwargs")
    patcher.wrap(FACTORY, _get_logits_processor)
    for name in ROW_PROCESSORS:
        patcher.wrap(f"{MODULE}:{name}.__call__", _per_row)


def _get_logits_processor(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    processors = wrapped(*args, **kwargs)
    if record.on:
        record.seen()
    if getattr(instance.config, "is_encoder_decoder", False):
        record.unchanged()
        return processors
    bound = bound_arguments(wrapped, args, kwargs)
    theirs = {id(p) for p in (bound.get("logits_processor") or ())}
    # Only the processors that read the ids: most calls have none, and then nothing is read from the device
    # (the mask's padding and the eos ids cost a host sync each).
    rows_read = [p for p in processors if type(p).__name__ in ROW_PROCESSORS and id(p) not in theirs
                 and not _skips_padding(p)]
    if not rows_read:
        record.unchanged()
        return processors
    mask = (bound.get("model_kwargs") or {}).get("attention_mask")
    pads = _left_pads(mask, bound.get("encoder_input_ids"))
    if not pads:
        record.unchanged()
        return processors
    eos = _eos_ids(bound.get("generation_config"))
    marked = []
    for processor in rows_read:
        vars(processor)[PADS] = (pads, int(mask.shape[1]), eos)
        marked.append(type(processor).__name__)
    if marked and record.on:
        record.changed("%s: each of %d padded rows without its padding",
                        ", ".join(marked), sum(1 for p in pads if p))
    return processors


def _eos_ids(config: Any) -> list[int]:
    eos = getattr(config, "_eos_token_tensor", None)
    if eos is None:
        eos = getattr(config, "eos_token_id", None)
    if eos is None:
        return []
    if hasattr(eos, "tolist"):
        eos = eos.tolist()
    return [int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])]


def _left_pads(mask: Any, prompt: Any) -> list[int] | None:
    """Each row's number of left pads, or None: no padding, or a mask that is not a left padding of these ids."""
    import torch

    if not isinstance(mask, torch.Tensor) or mask.dim() != 2 or mask.dtype.is_floating_point:
        return None
    # Token ids of the same width (not inputs_embeds: there the ids the processors see start after the prompt).
    if not isinstance(prompt, torch.Tensor) or prompt.dim() != 2 or prompt.dtype.is_floating_point \
            or prompt.shape[1] != mask.shape[1] or mask.shape[0] % prompt.shape[0]:
        return None
    real = mask != 0
    pads = (~real).int().cumprod(dim=1).sum(dim=1)  # the leading zeros of each row
    width = mask.shape[1]
    left = (real.sum(dim=1) == width - pads).all()  # False: a zero after the first one, not a left padding
    *pads, left = torch.cat([pads, left.reshape(1).to(pads.dtype)]).tolist()  # one host sync for both
    if not left:
        return None
    return pads if any(pads) and all(p < width for p in pads) else None


def _skips_padding(processor: Any) -> bool:
    """5.23+: generate() gives the repetition penalty the padding lengths itself (``prompt_ignore_length``)."""
    import torch

    return isinstance(getattr(processor, "prompt_ignore_length", None), torch.Tensor) \
        or getattr(processor, "logits_indices", None) is not None


def _per_row(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    marked = getattr(instance, "__dict__", {}).get(PADS)
    function = getattr(wrapped, "__func__", None)  # called through the class: left to upstream
    if marked is None or function is None:
        return record.through(wrapped, args, kwargs)
    pads, width, eos = marked
    bound = bound_arguments(wrapped, args, kwargs)
    input_ids, scores = bound.get("input_ids"), bound.get("scores")
    rows = scores.shape[0] if isinstance(scores, torch.Tensor) and scores.dim() == 2 else 0
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.shape[0] != rows \
            or rows % len(pads):
        return wrapped(*args, **kwargs)
    per = rows // len(pads)  # beams / returned sequences: 4.x expands the rows after building the processors
    # A row that has emitted eos is finished: generate() appends pads to it and ignores its scores. It keeps the
    # scores upstream gives it (its whole row), so that output_scores stay upstream's bitwise there.
    done = torch.isin(input_ids[:, width:], torch.tensor(eos, device=input_ids.device)).any(dim=1).tolist() \
        if eos and input_ids.shape[1] > width else [False] * rows
    out = []
    for r in range(rows):
        pad = 0 if done[r] else pads[r // per]
        processor = _for_row(instance, r, rows, pad)
        out.append(function(processor, input_ids[r : r + 1, pad:], scores[r : r + 1]))
    return torch.cat(out, dim=0)


def _for_row(processor: Any, row: int, rows: int, pad: int) -> Any:
    """The processor as the row alone has it: the encoder repetition penalty keeps the (padded) prompt of the whole
    batch, so a copy gets this row's prompt without its padding."""
    prompt = getattr(processor, "encoder_input_ids", None)
    if prompt is None or type(processor).__name__ != "EncoderRepetitionPenaltyLogitsProcessor":
        return processor
    one = copy.copy(processor)
    one.encoder_input_ids = prompt[row // (rows // prompt.shape[0]) : row // (rows // prompt.shape[0]) + 1, pad:]
    vars(one).pop(PADS, None)
    return one
