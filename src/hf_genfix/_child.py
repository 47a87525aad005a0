"""The interpreters hf_genfix's commands start import nothing from the folder the command was run in.

``python -c`` and ``python -m`` put the current directory first on ``sys.path``: a ``uuid.py``, ``difflib.py`` or
``packaging.py`` left in the user's folder (a cloned repository, a shared folder, CI's checkout) would run in
place of the standard library's module, inside a process the user trusted. So every child that doctor and
upgrade-check start (doctor's plain programs, the candidate's doctor, the scenarios, the environment checks) runs

- in a private, empty working directory (made once per process with ``mkdtemp``: mode 0700, removed at exit), so
  ``''`` and the current directory on its path name nothing, on every Python; and
- with ``-P`` (Python 3.11+: no unsafe path entry at all) where the child interpreter knows the flag.

A relative ``PYTHONPATH`` entry the user set (``PYTHONPATH=src``) keeps its meaning: it is made absolute against
the folder the command was run in; an empty entry (which means "the current directory") is dropped. Paths passed
to a child as arguments must be absolute for the same reason (``absolute()``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Mapping, Sequence

_cwd: str | None = None
_safe_path: dict[str, bool] = {}


def private_cwd() -> str:
    """An empty folder only this process writes to, for the children's working directory."""
    global _cwd
    if _cwd is None or not os.path.isdir(_cwd):
        _cwd = tempfile.mkdtemp(prefix="hf-genfix-cwd-")
        atexit.register(shutil.rmtree, _cwd, True)
    return _cwd


def knows_safe_path(python: str) -> bool:
    """Whether ``python`` accepts ``-P`` (3.11+); asked once per interpreter, from the private folder."""
    if python == sys.executable:
        return sys.version_info >= (3, 11)
    if python not in _safe_path:
        try:
            out = subprocess.run([python, "-c", "import sys; print(sys.version_info >= (3, 11))"],
                                 capture_output=True, text=True, cwd=private_cwd(), timeout=60)
            _safe_path[python] = out.stdout.strip() == "True"
        except (OSError, subprocess.SubprocessError):
            _safe_path[python] = False
    return _safe_path[python]


def argv(python: str, *args: str) -> list[str]:
    """``[python, -P?, *args]``: the command line of a child that imports nothing from the current folder."""
    return [python, *(["-P"] if knows_safe_path(python) else []), *args]


def environ(base: Mapping[str, str] | None = None, *, cwd: str | None = None) -> dict[str, str]:
    """A copy of ``base`` (default ``os.environ``) whose ``PYTHONPATH`` holds only absolute entries."""
    env = dict(os.environ if base is None else base)
    if env.get("PYTHONPATH"):
        here = cwd or os.getcwd()
        entries = [os.path.join(here, p) for p in env["PYTHONPATH"].split(os.pathsep) if p]
        if entries:
            env["PYTHONPATH"] = os.pathsep.join(entries)
        else:
            del env["PYTHONPATH"]
    return env


def absolute(path: Any) -> str:
    return os.path.abspath(os.fspath(path))


def run(cmd: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run`` from the private folder (``cwd`` may still be given, for a child that must run in the
    user's project: pytest)."""
    kwargs.setdefault("cwd", private_cwd())
    return subprocess.run(list(cmd), **kwargs)


def popen(cmd: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    kwargs.setdefault("cwd", private_cwd())
    return subprocess.Popen(list(cmd), **kwargs)
