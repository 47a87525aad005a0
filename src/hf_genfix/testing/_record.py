"""What the model's forward was actually fed at each step of a decode, and what that says about the defect.

The logits oracles say *that* a step is wrong; a model author needs to know *why*. Recording the inputs of every
forward call during a run (a forward pre-hook, so it works on any ``nn.Module``, a user's subclass or a
remote-code model alike) lets the report name the usual culprits of a ``prepare_inputs_for_generation`` that
falls out of step with the cache (seeds 000 and 002): input ids not trimmed to the uncached tokens, an attention
mask that does not cover cache + new tokens, position ids counted from the first column under left padding.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator


@dataclass
class ForwardCall:
    """The inputs of one forward call: how many tokens were fed, how many the cache held before it."""

    fed: int | None  # tokens fed (input_ids or inputs_embeds length)
    cached: int | None  # tokens the cache held before the call; None when no cache reached forward
    mask: Any  # the 2-D attention mask (a copy), or None
    mask_shape: tuple[int, ...] | None
    positions: Any  # the 2-D position ids (a copy), or None


def _cache_length(cache: Any) -> int | None:
    """Tokens held by a cache of any release, or None when no cache reached forward (or it is exotic)."""
    if cache is None:
        return None
    try:
        from ..helpers.decode import cache_length

        return cache_length(cache)
    except Exception:  # noqa: BLE001 - an exotic cache: no diagnosis rather than a failed check
        return None


@contextlib.contextmanager
def recording(model: Any) -> Iterator[list[ForwardCall]]:
    """Record the inputs of every forward call of ``model`` inside the block."""
    calls: list[ForwardCall] = []

    def hook(module: Any, args: tuple, kwargs: dict) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        embeds = kwargs.get("inputs_embeds")
        fed_from = ids if ids is not None else embeds
        fed = int(fed_from.shape[1]) if getattr(fed_from, "ndim", 0) >= 2 else None
        cache = kwargs.get("past_key_values", kwargs.get("cache"))
        mask = kwargs.get("attention_mask")
        positions = kwargs.get("position_ids")
        calls.append(
            ForwardCall(
                fed=fed,
                cached=_cache_length(cache),
                mask=mask.detach().clone() if getattr(mask, "ndim", 0) == 2 else None,
                mask_shape=tuple(mask.shape) if mask is not None and hasattr(mask, "shape") else None,
                positions=positions.detach().clone() if getattr(positions, "ndim", 0) == 2 else None,
            )
        )

    try:
        handle = model.register_forward_pre_hook(hook, with_kwargs=True)
    except TypeError:  # torch < 2.0: no keyword arguments in hooks, so nothing to record
        handle = None
    try:
        yield calls
    finally:
        if handle is not None:
            handle.remove()


def diagnose(calls: list[ForwardCall], prompt_width: int, left_padded: bool = False,
             failed_step: int | None = None) -> list[str]:
    """Sentences naming what was wrong with the inputs of a greedy run that generated one token per step.

    ``prompt_width`` is the (padded) prompt length: before generated step ``t`` the sequence holds
    ``prompt_width + t`` tokens, and a correct step feeds exactly the ones the cache does not hold yet.
    Causes first seen at ``failed_step`` (where the logits went wrong) come first; then those seen earlier (they
    did not change the logits then); then later ones. At the same step, untrimmed inputs come before the mask
    they also make too wide.
    """
    found: dict[str, str] = {}
    first_step: dict[str, int] = {}

    for step, call in enumerate(calls):
        _inspect(found, call, step, prompt_width, left_padded)
        for kind in found:
            first_step.setdefault(kind, step)
    order = ("untrimmed", "mask", "positions", "no-positions")
    at = len(calls) if failed_step is None else failed_step

    def rank(kind: str) -> tuple:
        step = first_step[kind]
        return (0 if step == at else 1 if step < at else 2, abs(step - at), order.index(kind))

    return [found[k] for k in sorted(found, key=rank)]


def _inspect(found: dict[str, str], call: ForwardCall, step: int, prompt_width: int, left_padded: bool) -> None:
    total = prompt_width + step
    cached = call.cached or 0
    at = "in the prompt pass" if step == 0 else f"at generated step {step}"
    if call.fed is not None and call.cached and call.fed + cached > total:
        found.setdefault(
            "untrimmed",
            f"input ids not trimmed: {at} forward was fed {_tokens(call.fed)} although the cache already "
            f"held {cached} of the {total}; prepare_inputs_for_generation must keep only the "
            f"{total - cached} not yet in the cache, otherwise they are written into the cache a second time",
        )
        return
    if call.mask_shape is not None and len(call.mask_shape) == 2 and call.fed is not None:
        width = call.mask_shape[1]
        if width != cached + call.fed:
            found.setdefault(
                "mask",
                f"attention mask does not follow the cache: {at} it has {width} column{_s(width)} for "
                f"{cached} cached + {call.fed} new token{_s(call.fed)}; it must cover the cached tokens and "
                "grow by one column per generated token",
            )
            return
    if left_padded and call.fed and call.mask is not None:
        _positions(found, call, cached, at)


def _positions(found: dict[str, str], call: ForwardCall, cached: int, at: str) -> None:
    """Under left padding, position ids must count each row's real tokens (cumsum of the mask - 1)."""
    try:
        from ..helpers.decode import positions_from_mask
    except ImportError:  # a build without the decode helpers: no position diagnosis
        return
    expected = positions_from_mask(call.mask, call.fed)
    real = call.mask[:, -call.fed:].bool()
    if call.positions is None:
        if bool((~call.mask.bool()).any()):
            found.setdefault(
                "no-positions",
                "no position_ids reached forward under left padding: a model with absolute or learned positions "
                "then counts from the first column, padding included; prepare_inputs_for_generation should pass "
                "cumsum(attention_mask) - 1",
            )
        return
    try:
        given = call.positions.to(expected.device).expand_as(expected)
    except RuntimeError:
        return
    wrong = (given != expected).logical_and(real)
    if not bool(wrong.any()):
        return
    row = int(wrong.any(-1).nonzero()[0, 0])
    columns = given.new_tensor(range(cached, cached + call.fed))
    arange = bool((given[:, :] == columns).all())
    how = "counted from the first column (arange), padding included" if arange else \
        "not cumsum(attention_mask) - 1"
    found.setdefault(
        "positions",
        f"position ids {how}: {at} row {row} got {given[row][real[row]].tolist()} for its real tokens where "
        f"counting only real tokens gives {expected[row][real[row]].tolist()}",
    )


def _tokens(n: int) -> str:
    return f"{n} token{_s(n)}"


def _s(n: int) -> str:
    return "" if n == 1 else "s"
