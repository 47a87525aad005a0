"""model-gemma3n-altup-zero-rows: on 4.53.0 a Gemma-3n position whose hidden state is exactly zero (the pad token:
its embedding row is zero) turns to NaN, and attention carries the NaN to every position of its row (4.53.1 fixed
it).

The defect. Gemma-3n's text model keeps several "altup" streams of the hidden state. Its forward derives streams 1..n
from the embedding with the ``altup_projections`` and rescales each to the embedding's magnitude, and at the end
folds them back with the ``altup_unembed_projections`` rescaled to stream 0's magnitude::

    current = projection(x)
    current = current * (target_magnitude / torch.maximum(magnitude(current), epsilon))

with ``epsilon = torch.finfo().min``, the most negative float, where a small positive floor was meant. A row whose
projection is zero divides by zero: 0 * (0 / 0) = NaN. The pad token's embedding row is zero wherever it is still
what ``padding_idx`` initialised (every model built from a config; a checkpoint keeps whatever it was saved with),
so on 4.53.0 a left-padded batch gives NaN logits in every padded row (the pads' NaN values reach the real tokens
through attention: a masked weight of 0 times NaN is NaN), and a row that generates the pad token is NaN from there
on. 4.53.1 takes ``epsilon = 1e-5`` and the square root of ``max(mean square, epsilon)``: a zero row stays zero
(upstream PR 39135, "Several fixes for Gemma3n").

Detection (``probe``). The sweep's ``left-padded`` scenario on its tiny Gemma-3n text model: a left-padded batch
against each row alone without a cache; 4.53.0 gives NaN, 4.53.1 on and this patch give the row's logits.

Correction. The division is inline in ``Gemma3nTextModel.forward``, between each projection's output and its
magnitude, so the projections' output is the only seam. ``__init__`` is wrapped to give each of the new model's
altup projections a forward hook (at construction, before any other thread can call it; a model built before
hf_genfix was imported gets it at its first forward), and ``forward`` to mark the call (a context variable, per
thread and task). The hook acts only inside a marked call: an output row that is exactly zero is returned filled
with the largest finite value of its dtype. Its mean square overflows to inf, ``target / inf`` is 0, and the row
becomes that value times 0 = 0: what 4.53.1 computes for a zero row (0 times a finite factor). Every other row is
untouched, so a batch without such a row is bitwise upstream's; outside the wrapped forward (this patch switched
off) the hooks do nothing.
"""

from __future__ import annotations

import contextvars
import threading
import weakref
from typing import Any

from hf_genfix.toolkit import recorder, reset_in_child

TARGET = "transformers.models.gemma3n.modeling_gemma3n:Gemma3nTextModel.forward"
INIT = "transformers.models.gemma3n.modeling_gemma3n:Gemma3nTextModel.__init__"
PROJECTIONS = ("altup_projections", "altup_unembed_projections")

record = recorder(__name__)
_inside: contextvars.ContextVar[bool] = contextvars.ContextVar("hf_genfix_gemma3n_altup", default=False)
_HOOKED: "weakref.WeakSet[Any]" = weakref.WeakSet()  # the models whose projections carry the hook
_LOCK = reset_in_child(threading.Lock())  # one model hooked at a time; free in a forked child


def install(patcher: Any) -> None:
    patcher.require(TARGET)
    patcher.require(INIT)
    patcher.wrap(INIT, _init)
    patcher.wrap(TARGET, _forward)


def _init(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    result = wrapped(*args, **kwargs)
    _hook(instance)
    return result


def _forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    if instance not in _HOOKED:
        _hook(instance)
    token = _inside.set(True)
    try:
        return wrapped(*args, **kwargs)
    finally:
        _inside.reset(token)


def _hook(model: Any) -> None:
    with _LOCK:
        if model in _HOOKED:
            return
        for name in PROJECTIONS:
            for projection in getattr(model, name, None) or ():
                # a deep copy of a hooked model carries the hook already (and is not in _HOOKED): one is enough
                if _zero_rows not in getattr(projection, "_forward_hooks", {}).values():
                    projection.register_forward_hook(_zero_rows)
        _HOOKED.add(model)


def _zero_rows(module: Any, inputs: tuple, output: Any) -> Any:
    import torch

    if not _inside.get() or not isinstance(output, torch.Tensor) or not output.is_floating_point():
        return None
    zero = ~output.detach().ne(0).any(dim=-1, keepdim=True)
    if not bool(zero.any()):
        return None  # no zero row: upstream's output, untouched
    if record.on:
        record.changed("%d zero rows of an altup projection kept zero (4.53.0 divides them 0/0)", int(zero.sum()))
    largest = torch.finfo(output.dtype).max
    if inputs and isinstance(inputs[0], torch.Tensor) and inputs[0].is_floating_point():
        # the forward casts the output to the hidden states' dtype: a value finite in both
        largest = min(largest, torch.finfo(inputs[0].dtype).max)
    return output.masked_fill(zero, largest)
