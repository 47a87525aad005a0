"""hf_genfix in worker processes: the hook each engine calls in its workers, and a worker's own report.

A worker is a Python interpreter the user's ``import hf_genfix`` never ran in: a torchrun or ``accelerate
launch`` rank, a ``multiprocessing`` child under spawn or forkserver, a DataLoader worker, a Ray task or actor.
docs/workers.md gives, per engine, the tested way to have hf_genfix active in every one of them:

- ``hf-genfix run -- torchrun ...`` / ``hf-genfix run -- accelerate launch ...`` / ``hf-genfix run -- python
  app.py``: every interpreter the program starts imports hf_genfix at start-up (``runner.py``);
- ``initializer=hf_genfix.workers.setup`` (``multiprocessing.Pool``), ``worker_init_fn=hf_genfix.workers.setup``
  (``DataLoader``), ``runtime_env=hf_genfix.workers.ray_runtime_env()`` (Ray) where the program is not started
  by ``hf-genfix run`` (a notebook, a cluster the driver only connects to).

The ``HF_GENFIX*`` toggles are read by each worker from its own environment when it imports hf_genfix: launchers
and ``multiprocessing`` pass the parent's environment on; Ray gets them in ``runtime_env["env_vars"]``.
``report()`` says, in the worker, what is active there and whether transformers code ran before hf_genfix did.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping

from . import _activation
from ._config import is_ours

__all__ = ["setup", "ray_runtime_env", "toggles", "report"]

# The hook by name: Ray imports it in each worker, so the driver needs nothing picklable.
SETUP = "hf_genfix.workers.setup"
_RAY_HOOK = "worker_process_setup_hook"


def setup(*_args: Any) -> None:
    """Have hf_genfix active in the worker process this runs in.

    Pass it, not a call of it, to the engine: ``Pool(initializer=hf_genfix.workers.setup)``,
    ``DataLoader(worker_init_fn=hf_genfix.workers.setup)`` (the worker id it passes is ignored), Ray's
    ``worker_process_setup_hook`` (``ray_runtime_env()`` names it). The work is done by the import that loading
    this function by reference makes in the worker: ``import hf_genfix`` reads the worker's ``HF_GENFIX*``
    environment (a mistyped variable leaves the worker running upstream's code with one ERROR line, as in any
    program; ``report()``'s ``config_error`` says so) and hooks transformers before the worker runs any task. The call has nothing left to do."""


def toggles(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``HF_GENFIX*`` variables of ``environ`` (default: this process's environment), to hand to workers;
    misspelt ones too (``hf_genfix=off``), so that a worker is inactive, and says why, where its driver is."""
    environ = os.environ if environ is None else environ
    return {k: v for k, v in environ.items() if is_ours(k)}


def ray_runtime_env(runtime_env: Mapping[str, Any] | None = None,
                    environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``runtime_env`` (a new dict; default empty) with hf_genfix active in every Ray worker it starts.

    It names ``setup`` as the ``worker_process_setup_hook`` (run by each worker process before its first task or
    actor) and adds the driver's ``HF_GENFIX*`` variables to ``env_vars``, where ``runtime_env`` does not set
    them itself, so a cluster that does not share the driver's environment gets the same toggles::

        ray.init(runtime_env=hf_genfix.workers.ray_runtime_env())
        ray.init(address="ray://head:10001", runtime_env=hf_genfix.workers.ray_runtime_env({"pip": [...]}))

    Ray runs one setup hook per worker: a ``runtime_env`` that already names another raises ``ValueError``
    (call ``hf_genfix.workers.setup()`` at the start of that hook instead)."""
    env = dict(runtime_env or {})
    hook = env.get(_RAY_HOOK)
    if hook is not None and hook != SETUP and hook is not setup:
        raise ValueError(
            f"runtime_env already names {_RAY_HOOK}={hook!r} and Ray runs one hook per worker: call "
            f"hf_genfix.workers.setup() at the start of that hook, and pass {{'env_vars': "
            f"hf_genfix.workers.toggles()}} in runtime_env for the toggles"
        )
    env[_RAY_HOOK] = SETUP
    env_vars = toggles(environ)
    env_vars.update(env.get("env_vars") or {})
    if env_vars:
        env["env_vars"] = env_vars
    return env


def report() -> dict[str, Any]:
    """This process's hf_genfix state, as plain data a worker can send back (picklable, JSON-able).

    ``pid``; ``python`` (the interpreter); ``enabled`` (False under ``HF_GENFIX=off`` or a rejected environment);
    ``config_error`` (why the environment was rejected, else None); ``toggles`` (the ``HF_GENFIX*`` variables this process
    read); ``states`` (patch id -> state, as ``hf_genfix.status()``); ``loaded_before``: the patches' target
    modules that were already imported when hf_genfix was, in this process. Their classes are patched in place
    since then, but calls made before ran upstream's code: a worker started the documented way has none, one
    whose code imported hf_genfix only after using transformers names them."""
    import hf_genfix

    records = hf_genfix.status()
    # Not the top package: `import transformers` is lazy and runs none of the code the patches wrap.
    targets = {t.split(":", 1)[0] for r in records for t in r.targets} - {"transformers"}
    before = getattr(hf_genfix, "_loaded_before", frozenset())
    return {
        "pid": os.getpid(),
        "python": sys.executable,
        "enabled": _activation.config().enabled,
        "config_error": str(_activation.config().error) if _activation.config().error is not None else None,
        "toggles": toggles(),
        "states": {r.id: r.state for r in records},
        "loaded_before": sorted(targets & before),
    }
