"""Timing shared by the benchmarks: CPU time of one call, with the garbage collector out of the timed region."""

from __future__ import annotations

import contextlib
import gc
import time
from typing import Any, Callable


def cpu_timed(call: Callable[[], Any]) -> tuple[float, Any]:
    """(CPU seconds of this process, result) of ``call()``: collected before, the collector paused during, as
    timeit does. CPU time, not wall time, so that other programs on a shared machine do not count."""
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        result = call()
        return time.process_time() - start, result
    finally:
        gc.enable()


def add_device_options(parser: Any) -> None:
    """``--device`` / ``--dtype``: where and in what dtype the benchmark builds its tiny models and batches."""
    parser.add_argument("--device", default="cpu", help="run on this device (cpu, cuda, cuda:1; default cpu)")
    parser.add_argument("--dtype", default="float32", help="model dtype: float32 (default), bfloat16, float16")


def use_device(args: Any) -> None:
    """Build every model (``tiny_model``) and padded batch of the rest of this run on ``args.device`` in
    ``args.dtype`` (``hf_genfix.oracles.precision``, entered for the process: a benchmark is one run). On a GPU
    the timers are wall and CPU clocks after ``generate()`` returned its tokens to a comparison, so every ratio
    still covers the whole run."""
    from hf_genfix.oracles.precision import precision

    _STACK.enter_context(precision(args.dtype, args.device))


_STACK = contextlib.ExitStack()
