"""What "correct" means, as code: tiny models built from configs and the oracles they are checked against.

One implementation serves the probes (``hf-genfix doctor``), the test suite and the pytest plugin. Everything
here imports torch and transformers lazily, inside the functions, so that importing hf_genfix stays cheap.
"""

from __future__ import annotations

from .generation import GenRun, check_rows_against_reference, generate_steps, left_pad, right_pad
from .outcome import DefectObserved, ProbeSkipped
from .precision import ATOLS, Precision, current, precision, tolerance
from .reference import assert_close, max_diff, reference_logits
from .tiny import TINY_DEFAULTS, tiny_config, tiny_model

__all__ = [
    "ATOLS",
    "Precision",
    "current",
    "precision",
    "tolerance",
    "DefectObserved",
    "GenRun",
    "check_rows_against_reference",
    "generate_steps",
    "left_pad",
    "right_pad",
    "ProbeSkipped",
    "TINY_DEFAULTS",
    "assert_close",
    "max_diff",
    "reference_logits",
    "tiny_config",
    "tiny_model",
]
