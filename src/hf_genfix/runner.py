"""``hf-genfix run [--] PROGRAM [ARGS...]``: run a program with hf_genfix active, without editing it.

The program is executed in place of this process (same pid, argv, stdin/stdout, signals and exit status) with
hf_genfix's bootstrap directory first on ``PYTHONPATH``. Every Python interpreter it starts then runs the
bootstrap ``sitecustomize`` at start-up, which imports hf_genfix and then the ``sitecustomize`` the user already
had (the way ``ddtrace-run`` and ``opentelemetry-instrument`` work). The ``HF_GENFIX*`` environment is read by
each interpreter as usual: ``HF_GENFIX=off hf-genfix run ...`` runs the program with every patch disabled.

Interpreters started with ``-S``, ``-I`` or ``-E`` skip ``sitecustomize`` or ``PYTHONPATH`` and are not covered.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Sequence

BOOTSTRAP_DIR = str(Path(__file__).resolve().parent / "_bootstrap")
# The pid the program will have after exec: its bootstrap reports loudly if hf_genfix cannot be imported there.
# (Not an HF_GENFIX_* name: those are reserved for toggles and checked against the patch ids.)
PID_VARIABLE = "_HF_GENFIX_RUN_PID"
PYTHON_VARIABLE = "_HF_GENFIX_RUN_PYTHON"

USAGE = """\
usage: hf-genfix run [--] PROGRAM [ARGS...]

Run PROGRAM with hf_genfix active in every Python interpreter it starts, without editing it:
  hf-genfix run -- python app.py --port 8000
  hf-genfix run -- torchrun --nproc-per-node 2 train.py
  HF_GENFIX_LOG=info hf-genfix run -- python app.py     (one line saying what was applied)
  HF_GENFIX=off hf-genfix run -- python app.py          (same program, hf_genfix disabled)
The program's arguments and exit status are kept; an existing sitecustomize still runs.
"""


def run_environment(environ: Mapping[str, str], pid: int | None = None) -> dict[str, str]:
    """``environ`` with the bootstrap directory first on PYTHONPATH (once, however often runs are nested) and
    the user's entries exactly as given: an empty entry (``:/x``) means the current directory to Python, while
    an empty PYTHONPATH means no entry at all."""
    env = dict(environ)
    given = env.get("PYTHONPATH", "")
    entries = [p for p in given.split(os.pathsep) if p != BOOTSTRAP_DIR] if given else []
    env["PYTHONPATH"] = os.pathsep.join([BOOTSTRAP_DIR] + entries)
    env[PID_VARIABLE] = str(os.getpid() if pid is None else pid)
    env[PYTHON_VARIABLE] = sys.executable  # named by the bootstrap when the program's python lacks hf_genfix
    return env


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    if args and args[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        sys.stderr.write("hf-genfix run: no program given\n" + USAGE)
        return 2
    env = run_environment(os.environ)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name != "posix":
        # No exec on Windows that keeps the console and exit status semantics: wait for a child instead.
        try:
            return subprocess.call(args, env=env)
        except OSError as exc:
            return _cannot_start(args[0], exc)
    try:
        os.execvpe(args[0], args, env)
    except OSError as exc:
        return _cannot_start(args[0], exc)
    raise AssertionError("unreachable: exec returned")  # pragma: no cover


def _cannot_start(program: str, exc: OSError) -> int:
    sys.stderr.write(f"hf-genfix run: cannot run {program!r}: {exc.strerror or exc}\n")
    # The shell's conventions: 127 not found, 126 found but not executable.
    return 127 if isinstance(exc, FileNotFoundError) else 126
