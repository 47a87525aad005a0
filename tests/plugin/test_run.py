"""``hf-genfix run`` end to end, in subprocesses: the program runs with hf_genfix active, unedited, with its argv,
its exit status and the user's own sitecustomize; HF_GENFIX=off is honoured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hf_genfix import runner

# The program under test: it never imports hf_genfix itself.
APP = '''
import json, os, subprocess, sys
seen_at_start = "hf_genfix" in sys.modules
states = None
if os.environ.get("APP_STATES"):
    if os.environ["APP_STATES"] == "after-transformers":
        import transformers.generation.utils  # noqa: F401  (the right-padding patch's target module)
    import hf_genfix  # already imported by the bootstrap: this only gives access to status()
    states = {s.id: s.state for s in hf_genfix.status()}
child = subprocess.run([sys.executable, "-c", "import sys; print('hf_genfix' in sys.modules)"],
                       capture_output=True, text=True).stdout.strip()
print(json.dumps({
    "argv": sys.argv[1:],
    "hf_genfix_at_start": seen_at_start,
    "sitecustomize": getattr(sys.modules.get("sitecustomize"), "__file__", None),
    "user_sitecustomize_ran": os.environ.get("USER_SITECUSTOMIZE_RAN"),
    "states": states,
    "grandchild_has_hf_genfix": child,
}))
sys.exit(int(os.environ.get("APP_EXIT", "0")))
'''

# What a program that writes `import hf_genfix` itself gets: the reference for the states under `run`.
EXPLICIT = '''
import json, os, hf_genfix
if os.environ["APP_STATES"] == "after-transformers":
    import transformers.generation.utils
print(json.dumps({s.id: s.state for s in hf_genfix.status()}))
'''

USER_SITECUSTOMIZE = '''
import os, sys
# Runs after hf_genfix's bootstrap, which activated hf_genfix first.
os.environ["USER_SITECUSTOMIZE_RAN"] = "yes, hf_genfix imported before: %s" % ("hf_genfix" in sys.modules)
'''


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_GENFIX") and k != runner.PID_VARIABLE}
    user_dir = tmp_path / "user_site"
    user_dir.mkdir(exist_ok=True)
    (user_dir / "sitecustomize.py").write_text(USER_SITECUSTOMIZE)
    env["PYTHONPATH"] = os.pathsep.join([str(user_dir)] + [p for p in [env.get("PYTHONPATH")] if p])
    env.update(extra)
    return env


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def _app(tmp_path: Path) -> Path:
    app = tmp_path / "app.py"
    app.write_text(textwrap.dedent(APP))
    return app


def _launchers() -> list[list[str]]:
    launchers = [[sys.executable, "-m", "hf_genfix", "run"]]
    script = Path(sys.executable).with_name("hf-genfix")
    if script.exists():
        launchers.append([str(script), "run"])
    return launchers


@pytest.mark.parametrize("launcher", _launchers(), ids=lambda l: "console-script" if len(l) == 2 else "python -m")
def test_program_runs_with_argv_exit_status_and_user_sitecustomize(tmp_path, launcher):
    app = _app(tmp_path)
    argv = ["first", "with space", "--flag=1", "--", "-x"]
    proc = _run(launcher + ["--", sys.executable, str(app)] + argv, _env(tmp_path, APP_EXIT="7"), tmp_path)
    assert proc.returncode == 7, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["argv"] == argv
    assert out["hf_genfix_at_start"] is True
    # The user's own sitecustomize ran, after hf_genfix, and holds the name as if imported directly.
    assert out["sitecustomize"] == str(tmp_path / "user_site" / "sitecustomize.py")
    assert out["user_sitecustomize_ran"] == "yes, hf_genfix imported before: True"
    # Interpreters the program starts are covered too (PYTHONPATH is inherited).
    assert out["grandchild_has_hf_genfix"] == "True"
    assert "not activated" not in proc.stderr


def test_without_double_dash_and_without_user_sitecustomize(tmp_path):
    app = _app(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_GENFIX")}
    proc = _run([sys.executable, "-m", "hf_genfix", "run", sys.executable, str(app), "a"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["argv"] == ["a"] and out["hf_genfix_at_start"] is True
    assert out["user_sitecustomize_ran"] is None


@pytest.mark.slow
@pytest.mark.parametrize("switch", [None, "off"])
def test_states_are_those_of_an_explicit_import(tmp_path, switch):
    pytest.importorskip("transformers")
    # With HF_GENFIX=off every patch is disabled at once: no need to pay for importing transformers twice.
    extra = {"APP_STATES": "after-transformers" if switch is None else "at-start"}
    if switch:
        extra["HF_GENFIX"] = switch
    env = _env(tmp_path, **extra)
    proc = _run([sys.executable, "-m", "hf_genfix", "run", "--", sys.executable, str(_app(tmp_path))], env,
                tmp_path)
    assert proc.returncode == 0, proc.stderr
    states = json.loads(proc.stdout.strip().splitlines()[-1])["states"]
    explicit = _run([sys.executable, "-c", EXPLICIT], env, tmp_path)
    assert explicit.returncode == 0, explicit.stderr
    assert states == json.loads(explicit.stdout.strip().splitlines()[-1])
    if switch == "off":
        assert set(states.values()) <= {"disabled"}
    else:
        assert "disabled" not in states.values()
        if "right-padding" in states:  # affected on every release: the run must have installed it
            assert states["right-padding"] == "applied"


def test_user_sitecustomize_error_is_reported_as_python_does(tmp_path):
    broken = tmp_path / "broken_site"
    broken.mkdir()
    (broken / "sitecustomize.py").write_text("raise RuntimeError('user site is broken')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_GENFIX")}
    env["PYTHONPATH"] = os.pathsep.join([str(broken)] + [p for p in [env.get("PYTHONPATH")] if p])
    code = ["-c", "import sys; print('ran'); sys.exit(3)"]
    plain = _run([sys.executable] + code, env, tmp_path)
    wrapped = _run([sys.executable, "-m", "hf_genfix", "run", sys.executable] + code, env, tmp_path)
    assert plain.returncode == wrapped.returncode == 3
    assert plain.stdout == wrapped.stdout == "ran\n"
    assert "Error in sitecustomize" in plain.stderr
    # The launcher's own interpreter also hits the broken file once; the program's report is the same line.
    assert wrapped.stderr.count(plain.stderr.strip()) >= 1


def test_no_program_and_missing_program(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_GENFIX")}
    for args in ([], ["--"]):
        proc = _run([sys.executable, "-m", "hf_genfix", "run"] + args, env, tmp_path)
        assert proc.returncode == 2
        assert "no program given" in proc.stderr and "hf-genfix run -- python app.py" in proc.stderr
    proc = _run([sys.executable, "-m", "hf_genfix", "run", "--", "no-such-program-hf-genfix"], env, tmp_path)
    assert proc.returncode == 127
    assert "cannot run 'no-such-program-hf-genfix'" in proc.stderr
    helped = _run([sys.executable, "-m", "hf_genfix", "run", "--help"], env, tmp_path)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: hf-genfix run")


def test_nested_runs_put_the_bootstrap_on_the_path_once():
    once = runner.run_environment({"PYTHONPATH": "/a" + os.pathsep + "/b"}, pid=1)
    twice = runner.run_environment(once, pid=2)
    assert twice["PYTHONPATH"].split(os.pathsep) == [runner.BOOTSTRAP_DIR, "/a", "/b"]
    assert runner.run_environment({}, pid=3)["PYTHONPATH"] == runner.BOOTSTRAP_DIR
    assert (Path(runner.BOOTSTRAP_DIR) / "sitecustomize.py").is_file()
    # Only the sitecustomize lives there: nothing else becomes importable as a top-level module.
    assert sorted(p.name for p in Path(runner.BOOTSTRAP_DIR).glob("*.py")) == ["sitecustomize.py"]


def test_a_bad_toggle_stops_before_the_program_runs(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_GENFIX")}
    env["HF_GENFIX_NO_SUCH_PATCH"] = "on"
    proc = _run([sys.executable, "-m", "hf_genfix", "run", "--", sys.executable, "-c", "print('program ran')"],
                env, tmp_path)
    # Never a partially activated program: the launcher itself rejects the environment.
    assert proc.returncode != 0
    assert "program ran" not in proc.stdout
    assert "ConfigError" in proc.stderr and "HF_GENFIX_NO_SUCH_PATCH" in proc.stderr


@pytest.mark.parametrize("given, expected", [
    (":/x", ["", "", "/x"]),              # an empty entry is the current directory to Python: kept
    ("/x::/y:", ["", "/x", "", "/y", ""]),
    ("", [""]),                           # an empty PYTHONPATH is no entry at all: none added
])
def test_pythonpath_is_kept_exactly_as_given(given, expected):
    env = runner.run_environment({"PYTHONPATH": given.replace(":", os.pathsep)}, pid=1)
    assert env["PYTHONPATH"].split(os.pathsep) == [runner.BOOTSTRAP_DIR] + expected[1:]
    assert runner.run_environment(env, pid=2)["PYTHONPATH"] == env["PYTHONPATH"]


def test_empty_pythonpath_entry_still_means_the_current_directory(tmp_path):
    (tmp_path / "in_cwd.py").write_text("VALUE = 'found in the working directory'\n")
    app = tmp_path / "elsewhere" / "app.py"
    app.parent.mkdir()
    app.write_text("import in_cwd\nprint(in_cwd.VALUE)\n")
    env = _env(tmp_path)
    env["PYTHONPATH"] = "" + os.pathsep + env["PYTHONPATH"]
    plain = _run([sys.executable, str(app)], env, tmp_path)
    assert plain.returncode == 0, plain.stderr
    ran = _run([sys.executable, "-m", "hf_genfix", "run", "--", sys.executable, str(app)], env, tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == plain.stdout == "found in the working directory\n"
