"""Running the children: doctor, the scenario runner and your tests, each in the interpreter of one release,
with their results cached while nothing they depend on changed."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from .. import _child
from .cache import read_cached, valid_report, valid_scenarios, write_atomic
from .common import EnvError, progress
from .environment import package_roots, quiet_env, site_packages, user_pythonpath


def fingerprint(with_scenarios: bool = False) -> str:
    """This hf_genfix's code and manifests as they are on disk (name, size, mtime of each file): a doctor report
    (or, ``with_scenarios``, a scenario result) is reused only while neither changed."""
    from .._config import manifest_dir

    package, _ = package_roots()
    own = package / "upgrade"  # the check itself (this package): changing it changes no report
    skip = ("_upgrade_pytest.py",) + (() if with_scenarios else ("upgrade_scenarios.py",))
    h = hashlib.sha256()
    for root in (package, Path(manifest_dir())):
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".toml") and "__pycache__" not in path.parts and path.name not in skip \
                    and own not in path.parents:
                st = path.stat()
                h.update(f"{path.relative_to(root)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:12]


def installed_digest(python: str) -> str:
    """What is installed where ``python`` imports from (the names of its .dist-info folders, which carry the
    versions, in its site-packages and the links of a candidate): a cached result of this interpreter is
    reused only while none of them changed. No interpreter is started for it."""
    if python == sys.executable:
        dirs = [p for p in sys.path if p and os.path.isdir(p)]
    else:
        env = Path(python).parent.parent
        dirs = [str(site_packages(Path(python))), str(env / "hf-genfix-links"), str(env / "hf-genfix-user")]
    names = []
    for d in dirs:
        with contextlib.suppress(OSError):
            names += [f"{d}/{n}" for n in os.listdir(d) if n.endswith((".dist-info", ".egg-info", ".pth"))]
    return hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()[:12]


def run_doctor(python: str, out: Path, extra: Sequence[str] = (), cache: Path | None = None,
               say: Callable[[str], None] = progress) -> dict[str, Any]:
    """``python -m hf_genfix doctor`` as JSON; with ``cache`` (a file), a report of the same interpreter, release,
    hf_genfix code and options is reused: probes are deterministic, and they are most of a warm run's time. A
    cached report that does not parse or validate is run again; the new one is written atomically."""
    if cache is not None:
        cached = read_cached(cache, valid_report, say)
        if cached is not None:
            return cached
    cmd = _child.argv(python, "-m", "hf_genfix", "doctor", "--output", _child.absolute(out), *extra)
    proc = _child.run(cmd, capture_output=True, text=True, env=quiet_env(python))
    written = _written(out, valid_report)
    if written is None:
        tail = proc.stderr.strip().splitlines()[-5:]
        raise EnvError(f"doctor wrote no usable report ({' '.join(cmd)}, exit {proc.returncode}): "
                       + " / ".join(tail))
    if cache is not None:
        write_atomic(cache, written[0])
    return written[1]


def _written(path: Path, valid: Callable[[Any], bool]) -> tuple[str, Any] | None:
    """(text, data) of the JSON a child wrote to ``path``, or None when it wrote none that ``valid`` accepts."""
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, ValueError):
        return None
    return (text, data) if valid(data) else None


def model_digest(path: str) -> str:
    """The checkpoint folder's files (name, size, mtime): a scenario result is reused only while none changed."""
    h = hashlib.sha256()
    for f in sorted(Path(path).rglob("*")):
        if f.is_file():
            st = f.stat()
            h.update(f"{f.relative_to(path)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:12]


def run_scenarios(python: str, model: str, out: Path, genfix: bool, trust_remote_code: bool,
                  cache: Path | None = None, say: Callable[[str], None] = progress) -> dict[str, Any]:
    """The scenarios of one checkpoint in one interpreter, with or without hf_genfix. With ``cache`` (a file
    named after everything the result depends on), a valid earlier result is reused."""
    if cache is not None:
        cached = read_cached(cache, valid_scenarios, say)
        if cached is not None:
            return cached
    cmd = _child.argv(python, "-m", "hf_genfix.upgrade_scenarios", _child.absolute(model), _child.absolute(out))
    if trust_remote_code:
        cmd.append("--trust-remote-code")
    proc = _child.run(cmd, capture_output=True, text=True,
                      env=quiet_env(python, {"HF_GENFIX": "on" if genfix else "off"}, user_path=True))
    written = _written(out, valid_scenarios)
    if written is None:
        return {"error": f"the scenario runner failed ({proc.returncode}): {proc.stderr.strip()[-800:]}",
                "scenarios": {}, "patches": {}}
    text, result = written
    if cache is not None and "error" not in result:  # a load error may be passing (a file being written)
        write_atomic(cache, text)
    return result


def _pytest_argv(python: str, cwd_on_path: bool) -> list[str]:
    return [python, "-m", "pytest"] if cwd_on_path else _child.argv(python, "-m", "pytest")


def run_pytest(python: str, args: Sequence[str], report: Path, cwd_on_path: bool = False) -> dict[str, Any]:
    """Runs ``python -m pytest ARGS`` in the folder the check was run from (your project: its code is meant to
    be imported there, as when you run pytest), with hf_genfix active (``hf-genfix run``; its pytest plugin
    loads with pytest) and ``hf_genfix._upgrade_pytest`` writing per test its outcome, a pasteable node id and
    its failure lines, and the calls per patch. ``hf_genfix run`` itself starts isolated (``_child.argv``);
    pytest gets the current folder on its path only where you wrote ``python -m pytest`` (``cwd_on_path``)."""
    cmd = _child.argv(python, "-m", "hf_genfix", "run", "--", *_pytest_argv(python, cwd_on_path), *args,
                      "-p", "hf_genfix._upgrade_pytest", f"--hf-genfix-upgrade-report={_child.absolute(report)}",
                      "-p", "no:cacheprovider")
    proc = _child.run(cmd, capture_output=True, text=True, env=quiet_env(python, user_path=True), cwd=os.getcwd())
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
        tests = {t: e for t, e in data["tests"].items() if isinstance(e, dict) and "outcome" in e}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        data, tests = {}, {}
    output = [ln for ln in (proc.stdout + proc.stderr).strip().splitlines() if ln.strip()]
    return {"outcomes": {t: e["outcome"] for t, e in tests.items()},
            "lines": {t: e["lines"] for t, e in tests.items() if e.get("lines")},
            "collect_errors": data.get("collect_errors") or {}, "patch_calls": data.get("patch_calls") or {},
            "exit": proc.returncode, "output_tail": output[-3:]}


def rerun_command(python: str, test_id: str, cwd_on_path: bool = False) -> str:
    """The command that reruns ``test_id`` as the check ran it: from this folder, in ``python``'s environment,
    with hf_genfix active and the ``PYTHONPATH`` the check gave it."""
    parts = ["cd", shlex.quote(os.getcwd()), "&&"]
    if os.environ.get("PYTHONPATH"):
        parts.append("PYTHONPATH=" + shlex.quote(user_pythonpath(python) or ""))
    parts += [shlex.quote(python), "-m", "hf_genfix", "run", "--",
              *map(shlex.quote, _pytest_argv(python, cwd_on_path)), shlex.quote(test_id)]
    return " ".join(parts)
