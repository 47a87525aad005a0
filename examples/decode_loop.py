"""A hand-written greedy loop over model.prepare_inputs_for_generation (custom decoding, serving code): it
should give, step by step, what a full forward over each row gives.

    python examples/decode_loop.py                 # with hf_genfix: RIGHT
    HF_GENFIX=off python examples/decode_loop.py   # upstream: WRONG (or an exception turned into WRONG)
"""

import hf_genfix  # noqa: F401

import sys

from _show import INIT, verdict
from hf_genfix.oracles import tiny_model
from hf_genfix.oracles.decode import DEFAULT_ROWS, check_manual_loop, manual_loop

# gpt2 (absolute positions) and a caller that never grows the mask: the loop every release gets wrong.
model = tiny_model("gpt2", initializer_range=INIT)
try:
    run = manual_loop(model, DEFAULT_ROWS, steps=4, grow_mask=False)
    for row, seq in zip(DEFAULT_ROWS, run.sequences):
        print(f"prompt {list(row)}: loop gives {seq[run.prompt_width:].tolist()}")
except Exception as exc:  # noqa: BLE001 - upstream may raise instead: the verdict below says so
    print(f"the loop raised {type(exc).__name__}: {exc}")
sys.exit(verdict("every step of the hand-written loop equals a full forward of its row",
                 lambda: check_manual_loop(model, grow_mask=False)))
