"""model-zamba2-step-dt-limit / model-nemotron-h-step-dt-limit: a Mamba-2 mixer's decoding steps skip the time-step
floor its prompt path applies (Zamba2 5.24.0, NemotronH 5.15-5.24; each fix's docstring has its defect and range).

The defect they share. The mixer clamps the discretisation step ``dt = softplus(dt + dt_bias)`` to its
``time_step_limit`` (``(config.time_step_min, inf)``) in its prompt / chunk path (``mamba2_chunk_scan(...,
dt_limit=self.time_step_limit)``), but its one-token path calls the module's ``mamba2_selective_state_update``
without it: every decoding step uses the unclamped step wherever ``softplus(dt + dt_bias)`` falls below the floor,
while the no-cache forward of the same tokens clamps it.

Correction. The mixer's ``forward`` is wrapped to make its ``time_step_limit`` known (a context variable, per thread
and task) to a wrapper of the module's ``mamba2_selective_state_update``, which computes ``softplus(dt + dt_bias)``
as the function itself does, clamps it to the limit and passes it on with ``dt_bias=None, dt_softplus=False``: the
same operations in the same order, so a step whose ``dt`` is above the floor is bitwise upstream's. A limit of
``(0, inf)`` (no floor) and calls from elsewhere are upstream's. The decoding steps are brought to the prompt
path's floor (the release's own no-cache forward, the oracle), not the prompt path to the steps'.
"""

from __future__ import annotations

import contextvars
from typing import Any, Sequence

from hf_genfix.toolkit import Drift, hidden_from_warnings, recorder, signature

# The limit of the mixer whose forward is running (None outside one): one variable for every mixer, each call
# restoring the value it found.
_limit: contextvars.ContextVar[Any] = contextvars.ContextVar("hf_genfix_step_dt_limit", default=None)


def install(patcher: Any, mixer: str, step: str, patch_module: str, mixer_params: Sequence[str] = ()) -> None:
    """Wrap ``mixer`` (``module:Class.forward``) and ``step`` (the module's ``mamba2_selective_state_update``);
    ``patch_module`` is the fix's ``__name__`` (its recorder)."""
    patcher.require(mixer, *mixer_params)
    func = patcher.require(step)
    # 5.25 puts the function behind a kernel-hub dispatcher: a module-level nn.Module whose forward is the torch
    # function (the signature seen through the call is (*args, **kwargs)); the positional convention is the same.
    params = _parameters(func) or _parameters(getattr(func, "forward", None))
    if not {"dt", "dt_bias", "dt_softplus"} <= params:
        raise Drift(f"{step} takes no dt, dt_bias, dt_softplus (its signature: {sorted(params)})")
    record = recorder(patch_module)
    patcher.wrap(mixer, lambda wrapped, instance, args, kwargs: _mixer(record, wrapped, instance, args, kwargs))
    patcher.wrap(step, lambda wrapped, instance, args, kwargs: _step(record, wrapped, args, kwargs))


def _parameters(func: Any) -> set:
    
    try:
        params = signature(func).parameters
    except (TypeError, ValueError):
        return set()
    return {name for name, p in params.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


@hidden_from_warnings
def _mixer(record: Any, wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    limit = getattr(instance, "time_step_limit", None)
    token = _limit.set(tuple(limit) if limit is not None else None)
    record.unchanged()  # the caller's call: the limit goes to the step's wrapper in a context variable of ours
    try:
        return wrapped(*args, **kwargs)
    finally:
        _limit.reset(token)


@hidden_from_warnings
def _step(record: Any, wrapped: Any, args: tuple, kwargs: dict) -> Any:
    import torch.nn.functional as F

    limit = _limit.get()
    if limit is None or tuple(limit) == (0.0, float("inf")) or len(args) < 3:
        return record.through(wrapped, args, kwargs)
    if record.on:
        record.seen()
    dt, bias, softplus = args[2], kwargs.get("dt_bias"), kwargs.get("dt_softplus", False)
    if bias is not None:
        dt = dt + bias.to(dt.dtype)
    if softplus:
        dt = F.softplus(dt)
    clamped = dt.clamp(min=limit[0], max=limit[1])
    if record.on and bool((clamped != dt).any()):
        record.changed("clamped a decoding step's dt to the floor %g", limit[0])
    return wrapped(*args[:2], clamped, *args[3:], **dict(kwargs, dt_bias=None, dt_softplus=False))
