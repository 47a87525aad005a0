"""Shared by the examples: run one of hf_genfix's oracle checks and print RIGHT or WRONG.

The check compares with what the model gives each row alone in one full forward pass without a cache (the
oracle of ``hf_genfix.oracles``); the exit status is 1 when the output is wrong, so a script can tell.
"""

from __future__ import annotations

import os
from typing import Any, Callable

# A tiny random model with the default initializer_range (0.02) has logits so close together that a wrong input
# often still gives the same greedy tokens; with larger weights the defect shows in the tokens at the first try.
INIT = 0.5


def mode() -> str:
    off = os.environ.get("HF_GENFIX", "").strip().lower() in ("off", "0", "false", "no")
    return "HF_GENFIX=off (upstream)" if off else "with hf_genfix"


def verdict(what: str, check: Callable[[], Any]) -> int:
    """Print one line, ``RIGHT <mode>: what`` or ``WRONG <mode>: what went wrong``; 0 when right, 1 when wrong."""
    from hf_genfix.oracles import DefectObserved

    try:
        check()
    except DefectObserved as exc:
        print(f"WRONG {mode()}: {exc.message}")
        return 1
    print(f"RIGHT {mode()}: {what}")
    return 0
