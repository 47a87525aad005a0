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

The correction is shared with the other step-dt-limit patch: ``patches/models/shared/step_dt_limit.py``.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared import step_dt_limit

MODULE = "transformers.models.zamba2.modeling_zamba2"
MIXER = f"{MODULE}:Zamba2MambaMixer.forward"
STEP = f"{MODULE}:mamba2_selective_state_update"


def install(patcher: Any) -> None:
    step_dt_limit.install(patcher, MIXER, STEP, __name__, mixer_params=("hidden_states",))
