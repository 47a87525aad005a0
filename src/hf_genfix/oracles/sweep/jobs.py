"""``hf-genfix doctor --sweep --jobs N``: the architectures judged in N worker processes.

A whole sweep is one architecture after another (tiny models: a second torch thread buys almost nothing), 17 to
40 minutes on one core with ``--differential``. The architectures are independent, so N workers each take the
next one not yet judged and send back what ``ArchRun.judge`` recorded; this process adds each record to the report
as it arrives (``merge``: the progress line, the findings) and, once all are in, puts them in the sweep's order. The
rest of the sweep (saved folders, threads and forks, the recall's verdict) stays in this process.

Each worker is ``python -m hf_genfix.oracles.sweep.jobs``, started as every child of hf_genfix's commands is
(``_child``: a private empty working directory, ``-P``, absolute ``PYTHONPATH``), with this process's environment:
it imports hf_genfix as a user program does, so its patches are the ones this process has (the same release, the
same ``HF_GENFIX_*`` switches). It judges with this process's precision (dtype, device, attention kernel),
scenarios, differential switch and recall list, on ``threads`` torch threads. The exchange is pickles on the
worker's stdin and on a copy of its stdout taken before anything runs; the worker's fd 1 then points at its
stderr, so model code that prints (4.x CTRL) cannot break the exchange.

A worker that dies (a segfault inside torch, the memory killer) costs its architecture, which is listed as an
unknown defect (a sequential sweep would have died with it: it must be looked at), and the recall's hits it held
(the recall can only come out lower, and says why for each miss); a fresh worker takes its place.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import time
from typing import Any, BinaryIO, Callable

from ... import _child
from ..._fork import reset_in_child

_WORKER_MODULE = "hf_genfix.oracles.sweep.jobs"


class _Worker:
    """One worker process, one architecture at a time."""

    def __init__(self, config: dict[str, Any]):
        self.proc = subprocess.Popen(
            _child.argv(sys.executable, "-m", _WORKER_MODULE), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            cwd=_child.private_cwd(), env=_child.environ())
        self._send(config)

    def _send(self, message: Any) -> None:
        pickle.dump(message, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.flush()

    def ask(self, message: Any) -> Any:
        """Send ``message``, return the worker's answer; ``WorkerDied`` when it is gone."""
        try:
            self._send(message)
            return pickle.load(self.proc.stdout)
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            code = self.proc.wait()
            raise WorkerDied(code) from exc

    def close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class WorkerDied(Exception):
    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def _died(model_type: str, code: int, seconds: float) -> dict[str, Any]:
    """The record of an architecture whose worker died judging it."""
    from . import core

    how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
    message = (f"the worker process judging {model_type} died ({how}) after {seconds:.1f} s: rerun "
               f"`hf-genfix doctor --sweep --arch {model_type}` to see where")
    finding = {"arch": model_type, "scenario": "(worker process)", "kind": "crash", "verdict": core.UNKNOWN,
               "step": None, "row": None, "max_logit_diff": None, "message": message, "cause": message,
               "explained_by": None, "summary": "", "catalog_wrong": False}
    return {"type": model_type, "skipped": None, "unusable": None, "findings": [(core.UNKNOWN, finding)],
            "settled": [], "pairs": [], "line": f"DIED: {message}",
            "result": {"seconds": round(seconds, 3), "scenarios": {}}}


def judge_all(types: list[str], kinds: dict[str, str], jobs: int, here: Any, budget_s: float | None, start: float,
              merge: Callable[[int, dict[str, Any]], None]) -> tuple[set[str], list[dict[str, Any]]]:
    """Judge ``types`` in ``jobs`` workers; ``merge(index, record)`` for each as it arrives (under a lock).
    Returns the types judged (the others were not reached within ``budget_s``) and each worker's recall state."""
    from ..precision import current

    try:
        import torch

        threads = max(1, torch.get_num_threads() // jobs)
    except ImportError:  # pragma: no cover - the sweep needs torch
        threads = 1
    setting = current()
    config = {"names": here.names, "differential_all": here.differential_all,
              "recall": here.tracker.known if here.tracker is not None else None,
              "dtype": setting.dtype, "device": setting.device, "attn": setting.attn, "threads": threads}
    queue = list(enumerate(types, 1))
    lock = reset_in_child(threading.Lock())  # the differential's fork scenarios run in this process (afterwards)
    judged: set[str] = set()
    states: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def take() -> tuple[int, str] | None:
        with lock:
            if not queue or errors:
                return None
            if budget_s is not None and time.perf_counter() - start > budget_s:
                queue.clear()  # not reached: the caller lists them
                return None
            return queue.pop(0)

    def run() -> None:
        worker = None
        try:
            while (item := take()) is not None:
                index, model_type = item
                if worker is None:
                    worker = _Worker(config)
                began = time.perf_counter()
                try:
                    record = worker.ask(("judge", model_type, kinds[model_type]))
                except WorkerDied as exc:
                    worker.close()  # its pipes; the process is reaped already
                    worker = None
                    record = _died(model_type, exc.code, time.perf_counter() - began)
                if isinstance(record, BaseException):
                    raise record  # the worker's own failure outside any scenario: hf_genfix's, not the model's
                with lock:
                    judged.add(model_type)
                    merge(index, record)
            if worker is not None:
                try:
                    state = worker.ask(("finish",))
                except WorkerDied:
                    # Its architectures are judged; only the recall's hits it held are lost: the recall can only
                    # come out lower (a miss says why), never higher.
                    state = {}
                with lock:
                    states.append(state)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            with lock:
                errors.append(exc)
        finally:
            if worker is not None:
                worker.close()

    threads_ = [threading.Thread(target=run, name=f"hf-genfix-sweep-job-{i}", daemon=True)
                for i in range(min(jobs, len(types)))]
    for t in threads_:
        t.start()
    for t in threads_:
        t.join()
    if errors:
        raise errors[0]
    return judged, states


def differences(one: dict[str, Any], other: dict[str, Any]) -> list[str]:
    """Where two sweep reports differ, wall times aside, as JSON holds them (``path: this != that``): what a
    ``jobs`` sweep must not change (tests/tooling/test_sweep_jobs.py, benchmarks/sweep_jobs.py). Upstream messages
    that print a set (QuantizedCache's layer types) differ between processes unless PYTHONHASHSEED is the same."""
    import json

    def plain(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items() if k != "seconds"}
        if isinstance(x, list):
            return [plain(v) for v in x]
        return x

    def walk(a: Any, b: Any, path: str) -> list[str]:
        if isinstance(a, dict) and isinstance(b, dict):
            return [d for k in dict.fromkeys([*a, *b]) for d in walk(a.get(k), b.get(k), f"{path}/{k}")]
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            return [d for i, (x, y) in enumerate(zip(a, b)) for d in walk(x, y, f"{path}[{i}]")]
        return [] if a == b else [f"{path}: {str(a)[:160]} != {str(b)[:160]}"]

    as_json = [plain(json.loads(json.dumps(r, default=str))) for r in (one, other)]
    return walk(*as_json, "")


def _serve(inbox: BinaryIO, outbox: BinaryIO) -> int:
    """The worker's loop: the config, then ``("judge", type, kind)`` and ``("finish",)`` requests."""
    import contextlib

    import hf_genfix

    from ...doctor.run import quiet_logs, quiet_progress
    from ..precision import precision
    from . import core

    config = pickle.load(inbox)
    try:
        import torch

        torch.set_num_threads(config["threads"])
    except ImportError:  # pragma: no cover
        pass
    registry = hf_genfix._activation.registry()
    with contextlib.ExitStack() as stack:
        stack.enter_context(quiet_logs())
        stack.enter_context(quiet_progress())
        stack.enter_context(precision(config["dtype"], config["device"], config["attn"]))
        here = core.ArchRun(registry, config["names"], config["differential_all"], config["recall"])
        while True:
            try:
                request = pickle.load(inbox)
            except EOFError:
                return 0
            if request[0] == "finish":
                answer: Any = here.tracker.state() if here.tracker is not None else {}
            else:
                _, model_type, kind = request
                try:
                    answer = here.judge(model_type, kind)
                except Exception as exc:  # noqa: BLE001 - sent back: the sweep raises it as a sequential one would
                    answer = RuntimeError(f"{model_type}: {type(exc).__name__}: {exc}")
            pickle.dump(answer, outbox, protocol=pickle.HIGHEST_PROTOCOL)
            outbox.flush()
            if request[0] == "finish":
                return 0


def main() -> int:
    # The exchange gets its own copy of stdout; fd 1 becomes stderr, for whatever model code prints.
    outbox = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inbox = sys.stdin.buffer
    return _serve(inbox, outbox)


if __name__ == "__main__":
    sys.exit(main())
