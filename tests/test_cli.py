"""``hf-genfix`` as a user meets it: a bad environment gives one clear line and exit 2 (never a traceback),
``--help`` always works, ``list`` shows what a plain program gets, ``run`` names the interpreter that has
hf_genfix when the program's own python lacks it."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hf_genfix import runner

BAD_ENVIRONMENTS = {
    "misspelt name": ({"HF_GENFIX_RIGHT_PADING": "on"}, "HF_GENFIX_RIGHT_PADING", "HF_GENFIX_RIGHT_PADDING"),
    "bad value": ({"HF_GENFIX_STRICT": "maybe"}, "HF_GENFIX_STRICT", "off"),
    "bad log level": ({"HF_GENFIX_LOG": "debgu"}, "HF_GENFIX_LOG", "debug"),
}


def _launchers() -> list[list[str]]:
    launchers = [[sys.executable, "-m", "hf_genfix"]]
    script = shutil.which("hf-genfix", path=str(Path(sys.executable).parent))
    if script:
        launchers.append([script])
    return launchers


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_GENFIX") and k != runner.PID_VARIABLE}
    env.update(extra)
    return env


def _cli(launcher: list[str], args: list[str], env: dict[str, str], cwd: Path | None = None):
    return subprocess.run(launcher + args, env=env, capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.mark.slow
@pytest.mark.parametrize("launcher", _launchers(), ids=lambda l: "python -m" if len(l) == 3 else "console script")
@pytest.mark.parametrize("case", sorted(BAD_ENVIRONMENTS))
def test_bad_environment_is_one_line_and_exit_2_for_every_command(launcher, case):
    extra, variable, hint = BAD_ENVIRONMENTS[case]
    env = _env(**extra)
    for args in (["list"], ["list", "--json"], ["doctor"], ["doctor", "--json"],
                 ["run", "--", sys.executable, "-c", "print('program ran')"]):
        proc = _cli(launcher, args, env)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and "program ran" not in proc.stdout
        (line,) = proc.stderr.splitlines()
        assert variable in line and repr(extra[variable]) in line and hint in line, line
        assert "accepted" in line
    for args in (["--help"], ["list", "--help"], ["doctor", "--help"], ["run", "--help"]):
        proc = _cli(launcher, args, env)
        assert proc.returncode == 0 and "usage: hf-genfix" in proc.stdout, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_list_with_a_bad_variable_still_prints_the_valid_names():
    proc = _cli(_launchers()[0], ["list"], _env(HF_GENFIX_RIGHT_PADING="on"))
    assert proc.returncode == 2
    lines = proc.stdout.splitlines()
    names = [line.split()[0] for line in lines if line.startswith("  HF_GENFIX")]
    assert {"HF_GENFIX", "HF_GENFIX_STRICT", "HF_GENFIX_LOG", "HF_GENFIX_RIGHT_PADDING"} <= set(names)
    assert any(line.startswith("  HF_GENFIX_RIGHT_PADDING") and "did you mean" in line for line in lines)
    assert any("HF_GENFIX_RIGHT_PADING='on'" in line for line in lines)
    data = json.loads(_cli(_launchers()[0], ["list", "--json"], _env(HF_GENFIX_RIGHT_PADING="on")).stdout)
    assert [e["variable"] for e in data["config_errors"]] == ["HF_GENFIX_RIGHT_PADING"]
    assert "HF_GENFIX_RIGHT_PADDING" in {v["name"] for v in data["variables"]}


def test_a_strict_program_importing_hf_genfix_still_raises_config_error():
    proc = subprocess.run([sys.executable, "-c", "import hf_genfix"],
                          env=_env(HF_GENFIX_RIGHT_PADING="on", HF_GENFIX_STRICT="on"),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "hf_genfix._config.ConfigError: HF_GENFIX_RIGHT_PADING='on'" in proc.stderr


@pytest.mark.skipif(os.name != "posix", reason="the stand-in interpreter is a shell script")
def test_run_with_a_python_that_lacks_hf_genfix_names_the_one_that_has_it(tmp_path):
    # A python of another environment: hf_genfix cannot be imported there (shadowed, so that the test holds
    # whether or not hf_genfix is installed in this one's site-packages).
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "hf_genfix.py").write_text("raise ModuleNotFoundError(\"No module named 'hf_genfix'\", "
                                         "name='hf_genfix')\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    other = bindir / "python"
    other.write_text(f'#!/bin/sh\nPYTHONPATH="{runner.BOOTSTRAP_DIR}:{shadow}" exec "{sys.executable}" "$@"\n')
    other.chmod(other.stat().st_mode | stat.S_IEXEC)
    env = _env()
    env["PATH"] = os.pathsep.join([str(bindir), env.get("PATH", "")])
    proc = _cli([sys.executable, "-m", "hf_genfix"], ["run", "--", "python", "-c", "print('program ran')"], env)
    assert proc.returncode == 2
    assert "program ran" not in proc.stdout
    (line,) = proc.stderr.splitlines()
    assert "hf_genfix is not installed for" in line and f"installed for {sys.executable}" in line


def test_list_reports_what_a_plain_program_gets():
    pytest.importorskip("transformers")
    proc = _cli(_launchers()[0], ["list", "--json"], _env())
    assert proc.returncode == 0, proc.stderr
    states = {p["id"]: p for p in json.loads(proc.stdout)["patches"]}
    # `import hf_genfix, transformers` loads no generation module: right-padding is armed (or not needed), never
    # reported installed as the CLI would see it after importing every target.
    rp = states["right-padding"]
    assert rp["state"] in ("armed", "not-needed"), rp
    if rp["state"] == "armed":
        assert rp["reason"] == "installs when transformers.generation.utils is imported"
    assert all({"calls_seen", "calls_changed"} <= set(p) for p in states.values())
    text = _cli(_launchers()[0], ["list"], _env()).stdout
    assert "import hf_genfix, transformers" in text.splitlines()[0]
