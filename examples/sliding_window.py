"""A sliding-window model (Mistral, window 8) decoding well past its window with assisted decoding and with
generate(prefill_chunk_size=...): both should give plain greedy's tokens, each step equal to a full forward.

    python examples/sliding_window.py                 # with hf_genfix: RIGHT
    HF_GENFIX=off python examples/sliding_window.py   # upstream: WRONG on the releases with these defects

It says first whether the installed release has them (assisted decoding past the window: 4.56, 5.0, 5.12 -
5.17; prefill chunks: 5.0 - 5.2): elsewhere upstream is right too.
"""

import hf_genfix  # noqa: F401

import sys

import transformers
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from _show import INIT, verdict
from hf_genfix.oracles.decode import UPSTREAM_ERRORS, defect_on_error
from hf_genfix.oracles.generation import uncompiled
from hf_genfix.oracles.sliding import check_past_window, check_same_as_greedy, sliding_model

PATCHES = {  # the catalog's patches for what this script runs, and the releases they cover
    "sliding-window-rollback-cache": ">=4.56.0,!=4.57.*,<5.1.0",
    "sliding-window-dynamic-full": ">=5.12.0,<5.14.0",
    "sliding-window-draft-keys": ">=5.15.0,<5.18.0",
    "sliding-window-prefill-chunks": ">=5.0.0,<5.3.0",
}
release = Version(transformers.__version__).base_version  # 5.12.0rc1 and 5.12.0.dev0 count as 5.12.0
here = [pid for pid, spec in PATCHES.items() if SpecifierSet(spec).contains(release)]
print(f"transformers {transformers.__version__}: "
      + (f"has the defects of {', '.join(here)}" if here else "has none of these defects (upstream is right)"))

model = sliding_model("mistral", initializer_range=INIT)
drafter = sliding_model("mistral", seed=1, initializer_range=INIT)
row = [17, 44, 91, 23, 5, 60, 12, 77, 88, 41, 7, 30]  # 12 tokens, then 16 new ones: 3.5 windows of 8


def check() -> None:
    what = "assisted decoding (2-token drafts) past the window"
    with defect_on_error(what, (*UPSTREAM_ERRORS, IndexError)):
        check_same_as_greedy(model, row, 16, what, assistant_model=drafter, num_assistant_tokens=2,
                             num_assistant_tokens_schedule="constant")
    if hasattr(transformers.GenerationConfig(), "prefill_chunk_size"):  # 4.51+
        what = "generate(prefill_chunk_size=5) past the window"
        with defect_on_error(what, (ValueError, IndexError, RuntimeError)), uncompiled() as no_compile:
            check_past_window(model, [row], 16, what, prefill_chunk_size=5, **no_compile)


sys.exit(verdict("assisted decoding and chunked prefill past the window match plain greedy and the reference",
                 check))
