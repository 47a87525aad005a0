"""Every command run from a folder full of planted modules runs none of them (issue 37).

A cloned repository or a shared folder can hold a ``uuid.py``, a ``json.py`` or a ``transformers.py``. ``python -c``
puts the current folder first on ``sys.path``, so an interpreter started there with ``-c`` imports those in place
of the real modules. The folder below is planted with a module for every top-level module the interpreters of
each command import, the standard library's and third-party alike (computed from their ``sys.modules``): each
writes a marker file and raises. Every command then runs from that folder and must write no marker and exit as it
does from an empty folder.

``python -c "import hf_genfix"`` is the user's own interpreter: its path is Python's rule, not ours; what is
checked there is that importing hf_genfix imports nothing else from the folder, ``__future__`` included (the
modules ``import hf_genfix`` runs do without ``from __future__ import annotations``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hf_genfix import runner

# What doctor's plain-program interpreters run (hf_genfix.oracles.user_programs): the forking parent imports the
# preloaded libraries, then each child runs _CHILD on its program (the tokenizer's for pad-token).
PLAIN_CHILD = """
import contextlib, importlib, io, json, sys
from hf_genfix import catalog
from hf_genfix.oracles import user_programs
for lib in user_programs.PRELOADED:
    with contextlib.suppress(Exception):
        importlib.import_module(lib)
sys.argv[1:] = [catalog.program("pad-token").imports]
with contextlib.redirect_stdout(io.StringIO()):
    exec(user_programs._CHILD, {})
print(json.dumps(sorted(sys.modules)))
"""

# What `hf-genfix list` and `run` import in their own process.
LIST_PROCESS = """
import contextlib, io, json, sys
from hf_genfix import cli
with contextlib.redirect_stdout(io.StringIO()):
    cli.main(["list", "--json"])
print(json.dumps(sorted(sys.modules)))
"""


def _env() -> dict[str, str]:
    # PYTHONSAFEPATH would hide the problem (no current folder on any path): the user's shell rarely sets it.
    drop = {runner.PID_VARIABLE, runner.PYTHON_VARIABLE, "PYTHONSAFEPATH"}
    return {k: v for k, v in os.environ.items() if not k.startswith("HF_GENFIX") and k not in drop}


def _imported(code: str) -> set[str]:
    """The top-level names of the modules an interpreter running ``code`` imports (run isolated: ``-I``)."""
    proc = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=300,
                          env=_env(), cwd=os.path.dirname(sys.executable))
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = {m.split(".")[0] for m in json.loads(proc.stdout.strip().splitlines()[-1])}
    # Names Python could import as a module file: not __main__, not _sysconfigdata__linux_x86_64-linux-gnu.
    return {n for n in names if n.isidentifier() and n not in ("__main__", "__mp_main__")}


def _plant(folder: Path, names: set[str], markers: Path) -> None:
    folder.mkdir()
    markers.mkdir()
    for name in names:
        (folder / f"{name}.py").write_text(
            f"open({str(markers / name)!r}, 'w').close()\n"
            f"raise ImportError('planted {name}.py from ' + __file__ + ' was imported')\n"
        )


def _command(args: list[str]) -> list[str]:
    script = shutil.which("hf-genfix", path=str(Path(sys.executable).parent))
    if script is None:  # pragma: no cover - the package is installed for tests (pip install -e .)
        pytest.skip("the hf-genfix console script is not installed next to this python")
    return [script, *args]


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=_env(), cwd=cwd)


def _assert_runs_nothing_planted(tmp_path: Path, names: set[str], commands: dict[str, list[str]]) -> dict:
    hostile, clean, markers = tmp_path / "hostile", tmp_path / "clean", tmp_path / "markers"
    _plant(hostile, names, markers)
    clean.mkdir()
    outputs = {}
    for label, cmd in commands.items():
        there = _run(cmd, hostile)
        ran = sorted(p.name for p in markers.iterdir())
        assert not ran, f"{label}: ran the planted {ran}: {there.stderr[-2000:]}"
        assert "planted" not in there.stdout + there.stderr, (label, there.stderr[-2000:])
        elsewhere = _run(cmd, clean)
        assert there.returncode == elsewhere.returncode, (label, there.stderr[-2000:], elsewhere.stderr[-2000:])
        outputs[label] = there
    return outputs


def test_list_run_and_help_run_nothing_from_the_current_folder(tmp_path):
    names = _imported(LIST_PROCESS) | _imported("import hf_genfix, json, sys; print(json.dumps(sorted(sys.modules)))")
    assert {"hf_genfix", "transformers", "json", "packaging"} <= names, sorted(names)
    _assert_runs_nothing_planted(tmp_path, names, {
        "list": _command(["list"]),
        "list --json": _command(["list", "--json"]),
        "run -- python -c pass": _command(["run", "--", sys.executable, "-c", "pass"]),
        "upgrade-check --help": _command(["upgrade-check", "--help"]),
    })


def test_importing_hf_genfix_imports_nothing_from_the_folder(tmp_path):
    names = _imported("import hf_genfix, json, sys; print(json.dumps(sorted(sys.modules)))")
    # (hf_genfix.py itself is the module the program names: Python's rule finds it first in the folder.)
    _assert_runs_nothing_planted(tmp_path, (names | {"__future__"}) - {"hf_genfix"}, {
        "python -c 'import hf_genfix'": [sys.executable, "-c", "import hf_genfix"],
    })


@pytest.mark.slow
def test_doctor_runs_nothing_from_the_current_folder(tmp_path):
    names = _imported(PLAIN_CHILD) | _imported(LIST_PROCESS)
    assert {"uuid", "difflib", "packaging", "json", "wrapt", "tomllib", "torch", "hf_genfix"} <= names, sorted(names)
    out = _assert_runs_nothing_planted(tmp_path, names, {
        "doctor --patch pad-token": _command(["doctor", "--patch", "pad-token", "--json"]),
    })
    (patch,) = json.loads(out["doctor --patch pad-token"].stdout)["patches"]
    if patch["state"] in ("applied", "forced"):
        # The plain program ran for real (an interpreter that failed to start would leave the verdict alone).
        assert patch["plain_program"]["error"] is None, patch["plain_program"]
        assert patch["plain_program"]["state"] == patch["state"], patch["plain_program"]


@pytest.mark.parametrize("fork", [True, False], ids=["forking", "one interpreter per program"])
def test_plain_program_interpreters_start_outside_the_current_folder(monkeypatch, fork):
    # The fast half of the doctor case above: how doctor starts its plain-program interpreters.
    from hf_genfix import _child
    from hf_genfix.oracles import user_programs

    started = []
    monkeypatch.setattr(subprocess, "Popen", lambda cmd, **kw: started.append((cmd, kw)))
    if not fork:
        monkeypatch.delattr(os, "fork", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["src", "", "/abs"]))
    user_programs.PlainRun([("pad-token", "padding"), ("right-padding", "padding")])
    assert len(started) == (1 if fork else 2)
    for cmd, kw in started:
        assert cmd[:2] == ([sys.executable, "-P"] if sys.version_info >= (3, 11) else [sys.executable, "-c"])
        assert kw["cwd"] == _child.private_cwd() != os.getcwd() and not os.listdir(kw["cwd"])
        entries = kw["env"]["PYTHONPATH"].split(os.pathsep)
        assert all(os.path.isabs(p) for p in entries) and os.path.join(os.getcwd(), "src") in entries, entries
