"""What a patched call must not do to the rest of the process: threads and forks.

hf_genfix is installed process-wide, but each patched call must keep what it changes to itself. Two oracles, for
the differential (``tests/test_differential.py``, ``hf-genfix doctor --sweep --differential``) and the tests:

- ``check_thread_interference``: ordinary seeded ``from_config`` builds in one thread, while another thread loads
  a remote-code model with ``from_pretrained`` (the call ``remote-code-init-buffers`` patches), give the weights of
  the same builds made alone. An earlier fix built remote models inside transformers' ``no_init_weights()``, which
  switches ``torch.nn.init`` off for the whole process: 7 of 30 such builds came out uninitialised.
- ``check_fork_while_locked``: a process forked while another thread is inside ``activate()`` / ``revert()`` /
  ``forced()`` (it holds the registry's lock) can still use hf_genfix in the child: ``forced()``, ``activate()``
  and the import of a target module return within a timeout instead of blocking forever (DataLoader workers and
  pre-forking servers fork like this).

Both run their threads in a copy of the caller's context, so that inside ``hf_genfix.disabled()`` (the upstream
side of the differential) every thread is upstream.
"""

from __future__ import annotations

import contextvars
import os
import threading
import time
from typing import Any, Callable

from .outcome import DefectObserved, ProbeSkipped


def _thread(target: Callable[[], Any]) -> threading.Thread:
    context = contextvars.copy_context()
    return threading.Thread(target=context.run, args=(target,), daemon=True)


def check_thread_interference(builds: int = 8, model_type: str = "llama") -> dict[str, Any]:
    """``builds`` seeded builds of a tiny ``model_type`` made while another thread loads a tiny remote-code repo (a
    Llama with a 4.40-style ``prepare_inputs_for_generation``, which every release loads, hf_genfix or not) with
    ``from_pretrained`` again and again equal the same builds made alone."""
    import torch

    from transformers import AutoModelForCausalLM

    from .legacy import load_remote_model, write_remote_model
    from .legacy_models import remote_repo
    from .tiny import tiny_model

    import inspect

    from transformers import modeling_utils

    model_class = modeling_utils.PreTrainedModel
    if "init_empty_weights()" in inspect.getsource(getattr(model_class, "get_init_context", model_class.from_pretrained)):
        # 4.x builds every from_pretrained model inside init_empty_weights(), which moves the parameters that
        # any thread registers meanwhile to the meta device: upstream races with itself here, with or without
        # hf_genfix (measured on 4.57.6), and the comparison would be a coin toss.
        raise ProbeSkipped("upstream's from_pretrained itself patches nn.Module.register_parameter for the whole "
                           "process on this release (init_empty_weights)")

    def weights(seed: int) -> dict[str, Any]:
        return {k: v.detach().clone() for k, v in tiny_model(model_type, seed=seed).state_dict().items()}

    alone = [weights(seed) for seed in range(builds)]
    with remote_repo("tinylegacy") as repo:
        load_remote_model(write_remote_model(repo)).save_pretrained(repo)
        AutoModelForCausalLM.from_pretrained(str(repo), trust_remote_code=True)  # code imported before the race
        done, loads, errors = threading.Event(), [0], []

        def load() -> None:
            try:
                while not done.is_set() or loads[0] == 0:
                    AutoModelForCausalLM.from_pretrained(str(repo), trust_remote_code=True)
                    loads[0] += 1
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        together: list[dict[str, Any]] = []

        def build() -> None:
            try:
                for seed in range(builds):
                    together.append(weights(seed))
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)
            finally:
                done.set()

        threads = [_thread(load), _thread(build)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if errors:
        raise errors[0]
    differ = [seed for seed, (a, b) in enumerate(zip(alone, together))
              if a.keys() != b.keys() or not all(torch.equal(a[k], b[k]) for k in a)]
    if differ:
        raise DefectObserved(f"{len(differ)} of {builds} seeded {model_type} builds differ from the same builds made "
                             f"alone while another thread ran from_pretrained(trust_remote_code=True) "
                             f"({loads[0]} loads); seeds {differ}", differ=len(differ), builds=builds)
    return {"builds": builds, "loads": loads[0]}


def check_fork_while_locked(timeout_s: float = 10.0, hold_s: float = 0.2) -> dict[str, Any]:
    """Fork while another thread holds hf_genfix's registry lock (as ``activate()``, ``revert()`` and ``forced()``
    do); the child calls ``forced()``, ``activate()``, imports a target module and must exit within
    ``timeout_s``. The holding thread lets go after ``hold_s`` (a real one finishes its work).

    Upstream (inside ``hf_genfix.disabled()``) has no such lock: the child just imports."""
    import hf_genfix
    from hf_genfix._patcher import is_suppressed

    if not hasattr(os, "fork"):
        raise ProbeSkipped("no os.fork on this platform")
    registry = hf_genfix._activation.registry()
    upstream = is_suppressed("")  # disabled() with no ids: the program without hf_genfix
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with registry._lock:
            held.set()
            release.wait(hold_s)

    holder = _thread(hold)
    if not upstream:
        holder.start()
        held.wait()
    start = time.perf_counter()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork() of a multi-threaded process
        pid = os.fork()
    if pid == 0:  # the child: never return into the caller's stack
        code = 1
        try:
            if not upstream:
                with registry.forced():
                    registry.activate()
            import transformers.generation.utils  # noqa: F401  a target module of several patches

            code = 0
        finally:
            os._exit(code)
    release.set()
    status = None
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.01)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        raise DefectObserved(f"a child forked while another thread held hf_genfix's lock was still blocked after "
                             f"{timeout_s:.0f} s", hung=True)
    finally_seconds = round(time.perf_counter() - start, 3)
    if holder.is_alive():
        holder.join()
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        raise DefectObserved(f"a child forked while another thread held hf_genfix's lock failed (status {status})")
    return {"child_seconds": finally_seconds}


def _interference(subject: Any) -> dict[str, Any]:
    return check_thread_interference(builds=6)


def _fork(subject: Any) -> dict[str, Any]:
    return check_fork_while_locked()


# The differential's scenarios of the whole process, run once (not per architecture): name -> scenario(subject).
SCENARIOS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "thread-interference": _interference,
    "fork-during-activation": _fork,
}


def run_differential(registry: Any) -> dict[str, dict[str, Any]]:
    """Each process scenario without hf_genfix and with it, judged by ``differential.compare``:
    {name: {"verdict", "detail"}}."""
    from . import differential

    out = {}
    for name, scenario in SCENARIOS.items():
        pair = differential.differential(registry, scenario, None)
        out[name] = {"verdict": pair["verdict"], "detail": pair["detail"]}
    return out
