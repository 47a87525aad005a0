"""model-nemotron-h-step-dt-limit: NemotronH's decoding steps skip the time-step floor that its prompt path applies,
so a cached generate() (a plain one, a second turn from generate()'s returned cache, a reused prefix cache) differs
from a no-cache forward from the first one-token step (silently; 5.15-5.24, see the manifest for the range).

The defect. ``NemotronHMamba2Mixer.__init__`` sets ``time_step_limit = (config.time_step_min, inf)`` (5.15.0 to
5.24.0; ``config.time_step_limit``, ``(0, inf)`` by default, before and after), and ``forward`` clamps the
discretisation step ``dt = softplus(dt + dt_bias)`` to it in its prompt / chunk path
(``mamba2_chunk_scan(..., dt_limit=self.time_step_limit)``), but its one-token path (``seq_len == 1`` after a
state) calls ``mamba2_selective_state_update`` without it: every decoding step uses the unclamped step wherever
``softplus(dt + dt_bias)`` falls below the floor, while the no-cache forward of the same tokens clamps it. A chunk
after a cache is right (it scans from the cached states, clamped): the sweep's failing second turn and reused
prefix are the one-token steps before or after that chunk. Measured on 5.24.0, the continuation probes' loud tiny
NemotronH at the default floor 0.001: one-token steps after a 10-token cached prefix 0.0049 to 0.025, a 5-token
chunk after the prefix 1.9e-06, a chunk after one step 0.0082; with the floor taken off the mixer (0, inf) every
one of them 2e-06 to 6e-06. It is ``model-zamba2-step-dt-limit``'s defect, in NemotronH's copy of the mixer.

Detection. ``probe()``: the loud tiny NemotronH with a higher floor, a plain cached greedy generate(), every step
against a no-cache forward.

Correction. As ``model-zamba2-step-dt-limit`` does for Zamba2: ``NemotronHMamba2Mixer.forward`` is wrapped to make
its ``time_step_limit`` known (a context variable, per thread and task) to a wrapper of the module's
``mamba2_selective_state_update``, which computes ``softplus(dt + dt_bias)`` as the function itself does, clamps it
to the limit and passes it on with ``dt_bias=None, dt_softplus=False``: the same operations in the same order, so a
step whose ``dt`` is above the floor is bitwise upstream's. A limit of ``(0, inf)`` (no floor) and calls from
elsewhere are upstream's. The decoding steps are brought to the prompt path's floor (the release's own no-cache
forward, the oracle), not the prompt path to the steps': 5.25.0 settled it the other way, dropping the floor from
both paths (``config.time_step_limit`` again), so a patched 5.15-5.24 answers as its own no-cache forward does, not
as 5.25 does, wherever a step falls below the floor.

The correction is shared with the other step-dt-limit patch: ``patches/models/shared/step_dt_limit.py``.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared import step_dt_limit

MODULE = "transformers.models.nemotron_h.modeling_nemotron_h"
MIXER = f"{MODULE}:NemotronHMamba2Mixer.forward"
STEP = f"{MODULE}:mamba2_selective_state_update"


def install(patcher: Any) -> None:
    # The mixer's wrapper reads only the instance's time_step_limit: its parameters are not required (5.15 and 5.16
    # put forward behind a decorator whose signature is (*args, **kwargs)).
    step_dt_limit.install(patcher, MIXER, STEP, __name__)
