"""``hf-genfix doctor`` checks every argument before any work (issue 37): a bad one is one line on stderr and exit
status 2, and no probe runs, no target is imported, no report is written. The report itself is written
atomically: a failed write leaves the file as it was.

Nothing here measures time: "before any work" is asserted by making the work itself fail the test."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from hf_genfix import doctor  # noqa: E402

from doctor_fixture import make_registry  # noqa: E402,F401 - a fixture


@pytest.fixture
def no_work(monkeypatch):
    """Any step of a real run fails the test: the targets' import, a probe, the plain-program interpreters."""
    def work(*args, **kwargs):
        raise AssertionError("doctor started working before rejecting its arguments")

    for part, name in ((doctor.run, "diagnose"), (doctor.run, "import_targets"), (doctor.probing, "run_probe"),
                       (doctor.judging, "check_patch"), (doctor, "_main")):
        monkeypatch.setattr(part, name, work)
    from hf_genfix.oracles import user_programs

    monkeypatch.setattr(user_programs, "PlainRun", work)


def _rejected(argv: list[str], capsys) -> str:
    """Run doctor on ``argv``; assert exit 2, nothing on stdout and one line on stderr; return that line."""
    try:
        code = doctor.main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code == doctor.EXIT_USAGE == 2, (argv, err)
    assert out == "", out
    (line,) = err.splitlines()
    assert line.startswith("hf-genfix doctor: ") and "Traceback" not in err
    return line


def _unwritable_folder(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir(mode=0o500)
        return folder
    if os.path.isdir("/sys") and _refuses_files("/sys"):
        return Path("/sys")  # root may write in any folder of a normal file system, but not here
    pytest.skip("running as root with no folder that refuses new files")


def _refuses_files(folder: str) -> bool:
    return doctor.output_problem(os.path.join(folder, "probe.json")) is not None


OUTPUTS = {
    "/proc/version": (lambda tmp: "/proc/version", "cannot create a file in /proc"),
    "missing folder": (lambda tmp: str(tmp / "reprots" / "doctor.json"), "does not exist (doctor creates no folders)"),
    "parent is a file": (lambda tmp: str(tmp / "file.txt" / "doctor.json"), "is not a folder"),
    "a folder": (lambda tmp: str(tmp), "is a folder; name a file"),
    "unwritable folder": (lambda tmp: str(_unwritable_folder(tmp) / "doctor.json"), "cannot create a file in"),
    "empty": (lambda tmp: "", "no file named"),
}


@pytest.mark.parametrize("case", OUTPUTS)
def test_an_output_that_cannot_be_written_is_refused_before_any_probe(case, tmp_path, capsys, no_work):
    make, said = OUTPUTS[case]
    if case == "/proc/version" and not os.path.exists("/proc/version"):
        pytest.skip("no /proc here")
    (tmp_path / "file.txt").write_text("x")
    path = make(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    line = _rejected(["--output", path], capsys)
    assert said in line and f"--output {path}".strip() in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no folder made, no file left behind


ARGUMENTS = {
    "unknown patch": (["--patch", "pad-tokn"], "--patch: no patch has the id pad-tokn (did you mean pad-token?)"),
    "unknown patch among known": (["--patch", "pad-token", "--patch", "no-such-patch"], "no-such-patch;"),
    "device not a torch device": (["--device", "gpu0"], "--device 'gpu0' is not a torch device"),
    "dtype": (["--dtype", "f13"], "--dtype: dtype 'f13' is not one of"),
    "budget not a number": (["--sweep", "--sweep-budget", "ten"], "'ten' is not a positive number of seconds"),
    "budget negative": (["--sweep", "--sweep-budget", "-5"], "'-5' is not a positive number of seconds"),
    "budget infinite": (["--sweep", "--sweep-budget", "inf"], "'inf' is not a positive number of seconds"),
    "sweep options alone": (["--arch", "llama", "--sweep-budget", "60"], "--arch, --sweep-budget go with --sweep"),
    "jobs zero": (["--sweep", "--jobs", "0"], "'0' is not a whole number of worker processes"),
    "jobs not a number": (["--sweep", "--jobs", "two"], "'two' is not a whole number of worker processes"),
    "jobs alone": (["--jobs", "2"], "--jobs goes with --sweep"),
    "unknown scenario": (["--sweep", "--scenario", "cahced"], "no scenario cahced (did you mean cached?)"),
    "unknown model type": (["--sweep", "--arch", "lama"], "has no model type lama"),
    "unknown option": (["--outptu", "x.json"], "unrecognized arguments: --outptu"),
    "attention kernel alone": (["--attn", "sdpa"], "--attn goes with --sweep"),
    "unknown attention kernel": (["--sweep", "--attn", "flash"], "invalid choice: 'flash'"),
}


@pytest.mark.parametrize("case", ARGUMENTS)
def test_a_bad_argument_is_one_line_and_exit_2_before_any_probe(case, capsys, no_work):
    argv, said = ARGUMENTS[case]
    assert said in _rejected(argv, capsys)


def test_a_device_this_torch_cannot_use_is_refused_before_any_probe(capsys, no_work):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    assert "--device cuda" in _rejected(["--device", "cuda"], capsys)


def test_the_console_script_says_one_line_too(tmp_path):
    script = shutil.which("hf-genfix", path=str(Path(sys.executable).parent))
    if script is None:  # pragma: no cover
        pytest.skip("the hf-genfix console script is not installed next to this python")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_GENFIX")}
    proc = subprocess.run([script, "doctor", "--output", str(tmp_path / "typo" / "report.json")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert (proc.returncode, proc.stdout, len(proc.stderr.splitlines())) == (2, "", 1), proc.stderr
    assert not (tmp_path / "typo").exists()


# -- writing the report -----------------------------------------------------------------------------------------
def test_the_report_is_written_whole_with_the_usual_mode(tmp_path, make_registry, capsys):
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "doctor.json"
    target.write_text("the previous report")
    assert doctor.main(["--json", "--output", str(target)], registry=make_registry("fixed-here")) == 0
    assert json.loads(target.read_text()) == json.loads(capsys.readouterr().out)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in target.parent.iterdir()] == ["doctor.json"]  # no temporary file left


def test_a_failed_write_leaves_the_old_report_whole(tmp_path, make_registry, capsys, monkeypatch):
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "doctor.json"
    target.write_text('{"the previous": "report"}\n')

    def disk_full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    code = doctor.main(["--output", str(target)], registry=make_registry("fixed-here"))
    out, err = capsys.readouterr()
    assert code == doctor.EXIT_USAGE, err
    (line,) = err.splitlines()
    assert "could not be written (No space left on device); the file is as it was" in line
    assert out.splitlines()[-1].startswith("OK: 1 patches checked")  # the verdict is still printed
    assert target.read_text() == '{"the previous": "report"}\n'
    assert [p.name for p in target.parent.iterdir()] == ["doctor.json"]


def test_a_device_is_written_directly(make_registry, capsys):
    if not os.path.exists("/dev/null"):
        pytest.skip("no /dev/null here")
    assert doctor.output_problem("/dev/null") is None
    assert doctor.main(["--output", "/dev/null"], registry=make_registry("fixed-here")) == 0
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
