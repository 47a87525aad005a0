"""model-zamba2-step-dt-limit: Zamba2's decoding steps skip the time-step floor that its prompt path applies, so a
plain cached generate() differs from a no-cache forward from the first generated token (silently; 5.24.0, see the
manifest for the range).

The defect. ``Zamba2MambaMixer`` clamps the discretisation step ``dt = softplus(dt + dt_bias)`` to at least
``config.time_step_min`` (``time_step_limit = (time_step_min, inf)``) in its prompt / chunk path
(``mamba2_chunk_scan(..., dt_limit=self.time_step_limit)``), but its one-token path calls
``mamba2_selective_state_update`` without it: every decoding step of a cached generate() uses the unclamped step
wherever ``softplus(dt + dt_bias)`` falls below the floor, while the no-cache forward of the same tokens clamps it.
Measured on the hunt's loud tiny Zamba2 (std 0.3, state 8, 8 heads of 8): a plain cached generate() 0.0069 (one
row) and 0.014 (left-padded batch of 3) against 1e-6 without a cache; one-token steps after a cached prefix 1e-3 to
3.4e-3. NemotronH's mixer has the same floor and the same one-token path (read, not run: its tiny config is 5.4M
parameters here); it would need its own manifest.

Detection. ``probe()``: a tiny Zamba2, a plain cached greedy generate(), every step against a no-cache forward.

Correction. ``Zamba2MambaMixer.forward`` is wrapped to make its ``time_step_limit`` known (a context variable, per
thread and task) to a wrapper of the module's ``mamba2_selective_state_update``, which then computes
``softplus(dt + dt_bias)`` as the function itself does, clamps it to the limit and passes it on with
``dt_bias=None, dt_softplus=False``: the same operations in the same order, so a step whose ``dt`` is above the floor
is bitwise upstream's. A limit of ``(0, inf)`` (no floor) and calls from elsewhere are upstream's.
"""

from __future__ import annotations

import contextvars
from typing import Any

from hf_genfix import Drift

MODULE = "transformers.models.zamba2.modeling_zamba2"
MIXER = f"{MODULE}:Zamba2MambaMixer.forward"
STEP = f"{MODULE}:mamba2_selective_state_update"

_limit: contextvars.ContextVar[Any] = contextvars.ContextVar("hf_genfix_zamba2_dt_limit", default=None)


def install(patcher: Any) -> None:
    patcher.require(MIXER, "hidden_states")
    step = patcher.require(STEP)
    # 5.25 puts the function behind a kernel-hub dispatcher: a module-level nn.Module whose forward is the torch
    # function (the signature seen through the call is (*args, **kwargs)); the positional convention is the same.
    params = _parameters(step) or _parameters(getattr(step, "forward", None))
    if not {"dt", "dt_bias", "dt_softplus"} <= params:
        raise Drift(f"{STEP} takes no dt, dt_bias, dt_softplus (its signature: {sorted(params)})")
    patcher.wrap(MIXER, _mixer)
    patcher.wrap(STEP, _step)


def _parameters(func: Any) -> set:
    import inspect

    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return set()
    return {name for name, p in params.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def _mixer(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    limit = getattr(instance, "time_step_limit", None)
    token = _limit.set(tuple(limit) if limit is not None else None)
    try:
        return wrapped(*args, **kwargs)
    finally:
        _limit.reset(token)


def _step(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch.nn.functional as F

    limit = _limit.get()
    if limit is None or tuple(limit) == (0.0, float("inf")) or len(args) < 3:
        return wrapped(*args, **kwargs)
    dt, bias, softplus = args[2], kwargs.get("dt_bias"), kwargs.get("dt_softplus", False)
    if bias is not None:
        dt = dt + bias.to(dt.dtype)
    if softplus:
        dt = F.softplus(dt)
    dt = dt.clamp(min=limit[0], max=limit[1])
    return wrapped(*args[:2], dt, *args[3:], **dict(kwargs, dt_bias=None, dt_softplus=False))
