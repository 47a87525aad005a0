"""Timing shared by the benchmarks: CPU time of one call, with the garbage collector out of the timed region."""

from __future__ import annotations

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
