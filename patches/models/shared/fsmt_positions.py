"""Whether ``model-fsmt-cached-positions`` is correcting the FSMT decoder call now running, which
``model-fsmt-static-cache`` needs to know: below 5.18 masking a static cache is right only while the positions are
corrected in the same call."""

from __future__ import annotations

import contextvars

# True inside the positions patch's decoder wrapper (this thread or task only; nested calls each their own).
CORRECTING: contextvars.ContextVar[bool] = contextvars.ContextVar("hf_genfix_fsmt_positions_inside", default=False)


def in_effect() -> bool:
    """Whether ``model-fsmt-cached-positions`` corrects the positions of the FSMT decoder call now running (its
    wrapper is on for this thread or task): ``model-fsmt-static-cache`` masks a static cache below 5.18 only then."""
    return CORRECTING.get()
