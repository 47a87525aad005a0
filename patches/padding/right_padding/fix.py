"""right-padding: a right-padded batch given to a decoder-only ``generate()`` yields wrong tokens.

The defect. A decoder-only model continues every row from the last column of the batch. When a row is padded on
the right, that column holds padding, so the row continues from a pad token at a position past its prompt: the
logits differ from the row generated alone (0.7-19 on tiny models) and the tokens are silently wrong. transformers
only logs "A decoder-only architecture is being used, but right-padding was detected!" (every release from 4.40
to 5.24 measured). Up to 5.2 that warning looks only at whether the last token equals the pad token, so it is
also raised for left-padded prompts that end in eos when pad == eos (fixed upstream in 5.3, PR 44021, which
looks at ``attention_mask[:, -1]``).

Detection. The attention mask says where the padding is: a row is right-padded when its mask is
``0..0 1..1 0..0`` with trailing zeros. Without a mask, a row that ends in pad tokens is right-padded when the
pad token is known and differs from every eos token (with pad == eos a trailing eos may be the prompt's own
end, so nothing is guessed, as upstream does). A mask with holes (``1 0 1``) is not padding: left alone. So is a
call that continues from a caller's cache (``past_key_values``), which cannot be realigned.

Correction. Each row is rotated right by its number of trailing pads, which turns the batch into the left-padded
batch a careful caller would have built; the same rotation is applied to the mask, to ``inputs_embeds`` and to
every other per-token input (``token_type_ids``, ``position_ids``, any 2-D ``*_ids`` / ``*_mask`` of the
batch's shape). ``generate()`` then runs on new tensors (the caller's are never modified) and its output is
returned as is: every row's new tokens are the ones that row gets alone, and the prompt part of the returned
``sequences`` is the left-aligned prompt. Sampling consumes the random stream exactly as for the left-padded
batch, so the same seed gives the same result. On <= 5.2, while the mask proves a batch left-aligned, the false
"right-padding was detected" warning is dropped.

The next turn. A caller who continues from the returned sequences usually hands back the mask they hold: their
right-padded prompt mask extended with ones, ``torch.cat([mask, ones], 1)``. That mask describes the layout they
passed, not the sequences hf_genfix returned (whose prompt part is left-aligned): upstream would attend the
left padding and hide real prompt tokens. So each realignment is remembered (the last 16: the returned prompt
and the caller's mask, on the CPU) and a later ``generate()`` whose ``input_ids`` begin with a returned prompt
and whose mask begins with the caller's mask for it gets that part of the mask rotated like the prompt was: each
row then continues as it does alone. Nothing else is touched: a mask that describes the sequences (``out !=
pad``, a left-aligned mask) is left as it is, and re-tokenized text is a new batch. A mask that hides real
tokens and attends pad tokens of the same row, not recognised, is reported once (WARNING) and used as given.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import Any

from hf_genfix.toolkit import recorder, reset_in_child

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

GENERATE = "transformers.generation.utils:GenerationMixin.generate"
WARNING = "transformers.generation.utils:logger.warning"

# Inputs of another prompt (classifier-free guidance): their padding is not the batch's.
_NOT_PER_TOKEN = ("negative_prompt_ids", "negative_prompt_attention_mask")

_state = threading.local()
log = logging.getLogger("hf_genfix")

# (returned prompt ids, the caller's prompt mask as bool, gather index), CPU tensors, newest last.
_realigned: "collections.deque[tuple[Any, Any, Any]]" = collections.deque(maxlen=16)
_realigned_lock = reset_in_child(threading.Lock())


def install(patcher: Any) -> None:
    patcher.require(GENERATE, "inputs", "generation_config", "**kwargs")
    patcher.wrap(GENERATE, _generate)
    from packaging.version import Version

    if patcher.transformers_version is not None and patcher.transformers_version < Version("5.3.0"):
        # On the module's own logger object, so no other logger is touched.
        patcher.wrap(WARNING, _quiet_false_alarm)


def _generate(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    given = kwargs
    kwargs = _describe_realigned(args, kwargs)
    plan = plan_realignment(instance, args, kwargs)
    if record.on:
        record.seen()
    if plan is None:
        if kwargs is given:
            record.unchanged()
        return wrapped(*args, **kwargs)
    if plan == "left-aligned":
        # The call as given; only upstream's false warning is dropped, by ``_quiet_false_alarm``, which counts
        # that for itself.
        if kwargs is given:
            record.unchanged()
        previous = getattr(_state, "left_aligned", False)
        _state.left_aligned = True
        try:
            return wrapped(*args, **kwargs)
        finally:
            _state.left_aligned = previous
    new_args, new_kwargs, remembered = plan
    result = wrapped(*new_args, **new_kwargs)
    if remembered is not None:
        with _realigned_lock:
            _realigned.append(remembered)
    return result


def _describe_realigned(args: tuple, kwargs: dict) -> dict:
    """``kwargs`` with the caller's mask rotated where it is the mask of a batch this patch realigned, handed
    back with the sequences it returned (``torch.cat([mask, ones], 1)``); else ``kwargs`` itself."""
    mask = kwargs.get("attention_mask")
    if not _realigned or mask is None:
        return kwargs
    ids = args[0] if args else kwargs.get("input_ids", kwargs.get("inputs"))
    import torch

    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or not isinstance(mask, torch.Tensor) \
            or mask.shape != ids.shape:
        return kwargs
    with _realigned_lock:
        candidates = list(_realigned)
    for aligned, caller_mask, index in reversed(candidates):
        batch, width = aligned.shape
        if ids.shape[0] != batch or ids.shape[1] < width:
            continue
        if torch.equal(mask[:, :width].ne(0).cpu(), caller_mask) and torch.equal(ids[:, :width].cpu(), aligned):
            fixed = torch.cat([_take(mask[:, :width], index), mask[:, width:]], dim=1)
            log.debug("hf_genfix right-padding: the attention mask given with sequences that hf_genfix "
                      "realigned describes the right-padded prompt; its first %d columns are realigned too", width)
            return dict(kwargs, attention_mask=fixed)
    return kwargs


def plan_realignment(model: Any, args: tuple, kwargs: dict) -> Any:
    """None (leave the call alone), "left-aligned" (mask proves no right padding), or the realigned call
    (args, kwargs, what to remember of the realignment)."""
    import torch

    config = getattr(model, "config", None)
    if config is None or getattr(config, "is_encoder_decoder", False):
        return None
    if kwargs.get("past_key_values") is not None or kwargs.get("cache") is not None:
        return None
    if args:
        ids, rest, ids_key = args[0], args[1:], None
    else:
        ids_key = "inputs" if kwargs.get("inputs") is not None else "input_ids"
        ids, rest = kwargs.get(ids_key), ()
    embeds = kwargs.get("inputs_embeds")
    reference = ids if isinstance(ids, torch.Tensor) and ids.dim() == 2 else embeds
    if not isinstance(reference, torch.Tensor) or reference.dim() < 2 or reference.shape[1] == 0:
        return None
    mask = kwargs.get("attention_mask")
    built_mask = False
    if mask is None:
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
            return None
        pad = _pad_id(model, args, kwargs)
        if pad is None:
            return None
        mask, built_mask = ids.ne(pad), True
    if not isinstance(mask, torch.Tensor) or mask.dim() != 2 or mask.shape != reference.shape[:2]:
        return None
    index = _left_align_index(mask)
    if index is None or isinstance(index, str):
        if not built_mask:
            _tell_if_misdescribed(model, args, kwargs, ids, mask)
        if index is None:
            return None if built_mask else "left-aligned"
        return None  # holes in the mask: not padding
    batch, width = mask.shape
    if record.on:
        record.changed("realigned %d of %d rows", int(index[:, 0].ne(0).sum()), batch)
    new_kwargs = dict(kwargs)
    for key, value in kwargs.items():
        if (
            key not in _NOT_PER_TOKEN
            and isinstance(value, torch.Tensor)
            and value.dim() >= 2
            and tuple(value.shape[:2]) == (batch, width)
            and (key == "inputs_embeds" or key.endswith("_ids") or key.endswith("_mask"))
        ):
            new_kwargs[key] = _take(value, index)
    if built_mask:
        new_kwargs["attention_mask"] = _take(mask.long(), index)
    aligned_ids = _take(ids, index) if isinstance(ids, torch.Tensor) and ids.dim() >= 2 else ids
    remembered = None
    if isinstance(ids, torch.Tensor) and ids.dim() == 2:
        remembered = (aligned_ids.detach().cpu(), mask.ne(0).cpu(), index.cpu())
    if args:
        return (aligned_ids,) + tuple(rest), new_kwargs, remembered
    if ids_key == "inputs":
        new_kwargs["inputs"] = aligned_ids
    return (), new_kwargs, remembered


def _tell_if_misdescribed(model: Any, args: tuple, kwargs: dict, ids: Any, mask: Any) -> None:
    """Log once when a mask with holes hides real tokens and attends pad tokens of the same row: a mask that
    describes another layout (e.g. a right-padded prompt's, kept after hf_genfix realigned it 16+ calls ago).
    The call itself runs as transformers runs it."""
    import torch

    if not isinstance(ids, torch.Tensor) or ids.shape != mask.shape or bool(mask.ne(0).all()):
        return
    pad = _pad_id(model, args, kwargs)
    if pad is None:
        return
    attended, is_pad = mask.ne(0), ids.eq(pad)
    if not bool(((attended & is_pad).any(dim=1) & (~attended & ~is_pad).any(dim=1)).any()):
        return
    with _realigned_lock:
        first = not getattr(_tell_if_misdescribed, "told", False)
        _tell_if_misdescribed.told = True
    log.log(logging.WARNING if first else logging.DEBUG,
            "hf_genfix right-padding: the attention_mask given to generate() hides real tokens and attends pad "
            "tokens (id %s) of the same row, so it does not describe input_ids; if these are sequences returned "
            "for a right-padded batch, pass attention_mask=(sequences != pad_token_id) (see hf_genfix "
            "docs/padding.md, 'The next turn')", pad)


def _pad_id(model: Any, args: tuple, kwargs: dict) -> int | None:
    """The pad id generate() will use, when it is known and differs from every eos id (else None)."""
    gen_config = kwargs.get("generation_config")
    if gen_config is None and len(args) > 1:
        gen_config = args[1]
    configs = [c for c in (gen_config, getattr(model, "generation_config", None)) if c is not None]

    def first(name: str) -> Any:
        if kwargs.get(name) is not None:
            return kwargs[name]
        for c in configs:
            if getattr(c, name, None) is not None:
                return getattr(c, name)
        return None

    pad, eos = first("pad_token_id"), first("eos_token_id")
    if pad is None:
        return None
    pad = int(pad.item() if hasattr(pad, "item") else pad)
    if hasattr(eos, "tolist"):
        eos = eos.tolist()
    eos_ids = set(eos if isinstance(eos, (list, tuple)) else [] if eos is None else [eos])
    return None if pad in eos_ids else pad


def _left_align_index(mask: Any) -> Any:
    """The gather index that rotates each row's trailing padding to its front; None when no row has any,
    "holes" when some row's attended tokens are not one contiguous block."""
    import torch

    attended = mask.ne(0)
    if bool(attended[:, -1].all()):
        return None
    width = attended.shape[1]
    # Position of each row's last attended token; rows with none keep their place.
    last = width - 1 - attended.flip(1).to(torch.int8).argmax(dim=1)
    shift = torch.where(attended.any(dim=1), width - 1 - last, torch.zeros_like(last))
    if not bool(shift.any()):
        return None
    index = (torch.arange(width, device=mask.device) - shift[:, None]) % width
    rolled = attended.gather(1, index).to(torch.int8)
    if bool((rolled[:, 1:] < rolled[:, :-1]).any()):
        return "holes"
    return index


def _take(value: Any, index: Any) -> Any:
    """``value`` with its second dimension gathered by ``index`` (a new tensor; ``value`` is not touched)."""
    index = index.to(value.device)
    if value.dim() > 2:
        index = index.reshape(index.shape + (1,) * (value.dim() - 2)).expand(-1, -1, *value.shape[2:])
    return value.gather(1, index)


def _quiet_false_alarm(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    """Drop the <= 5.2 "right-padding was detected" warning while the mask proves the batch left-aligned."""
    if getattr(_state, "left_aligned", False) and args and "right-padding was detected" in str(args[0]):
        return None
    return record.through(wrapped, args, kwargs)
