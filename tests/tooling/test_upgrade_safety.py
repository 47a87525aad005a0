"""``hf-genfix upgrade-check`` in a hostile folder, with bad arguments, a broken cache, nothing to compare, a
regressing test, your own packages and a tokenizer: each of these is checked here against the real code (the
children are real interpreters; only the candidate environment's build is replaced by a small venv that sees
this interpreter's packages, so no release is downloaded)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hf_genfix import _child, upgrade
from hf_genfix.upgrade_scenarios import SCENARIOS


# -- arguments ----------------------------------------------------------------------------------------------------
@pytest.fixture
def no_work(monkeypatch):
    """Any build, doctor or index look-up fails the test: arguments are checked before them."""
    def fail(*a, **k):
        raise AssertionError("work started before the arguments were checked")

    for part, name in (("environment", "build_env"), ("running", "run_doctor"), ("arguments", "check_on_index"),
                       ("running", "run_scenarios"), ("running", "run_pytest")):
        monkeypatch.setattr(getattr(upgrade, part), name, fail)


@pytest.mark.parametrize("argv, message", [
    (["5.x"], "'5.x' is not a transformers release number"),
    (["transformers>=5"], "is not a transformers release number"),
    (["5.24.0", "--cache-dir", "/etc/passwd"], "--cache-dir /etc/passwd is not a folder"),
    (["5.24.0", "--cache-dir", "/etc/passwd/envs"], "cannot be made: /etc/passwd is not a folder"),
    (["5.24.0", "--model", "EMPTY"], "no config.json in it"),
    (["5.24.0", "--model", "NOCONFIG"], "no config.json in it"),
    (["5.24.0", "--model", "BADCONFIG"], "config.json does not parse"),
    (["5.24.0", "--model", "/no/such/checkpoint"], "no such folder"),
    (["5.24.0", "--jobs", "0"], "--jobs 0"),
    (["5.24.0", "--link", "no-such-distribution-here"], "not installed here"),
])
def test_each_bad_argument_is_one_line_and_exit_2_before_any_work(argv, message, tmp_path, capsys, no_work):
    (tmp_path / "EMPTY").mkdir()
    (tmp_path / "NOCONFIG").mkdir()
    (tmp_path / "NOCONFIG" / "model.safetensors").write_bytes(b"")
    (tmp_path / "BADCONFIG").mkdir()
    (tmp_path / "BADCONFIG" / "config.json").write_text('{"model_type": "lla')
    argv = [str(tmp_path / a) if a.isupper() else a for a in argv]
    if "--cache-dir" not in argv:
        argv += ["--cache-dir", str(tmp_path / "cache")]
    start = time.monotonic()
    assert upgrade.main(argv) == 2
    took = time.monotonic() - start
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert took < 5, took  # no environment, no probe: under a second on a quiet machine
    assert not (tmp_path / "cache").exists()  # nothing made for a run that does not start


def _pip(stdout="", stderr="", rc=0):
    return lambda *a, **k: subprocess.CompletedProcess(a, rc, stdout, stderr)


def test_a_release_not_on_the_index_is_one_line_not_the_list(monkeypatch):
    listing = "transformers (5.24.0)\nAvailable versions: " + ", ".join(f"5.{i}.0" for i in range(24, -1, -1))
    monkeypatch.setattr(_child, "run", _pip(listing))
    upgrade.arguments.check_on_index("5.24.0")
    upgrade.arguments.check_on_index("5.3")  # 5.3 == 5.3.0
    with pytest.raises(upgrade.UsageError) as exc:
        upgrade.arguments.check_on_index("9.9.9")
    assert str(exc.value) == "transformers 9.9.9 is not on the package index (the newest there is 5.24.0)"
    monkeypatch.setattr(_child, "run", _pip(stderr="WARNING: retrying\nERROR: Could not reach the index (x)\n",
                                            rc=1))
    with pytest.raises(upgrade.UsageError, match=r"^cannot look transformers 5.24.0 up on the package index: "
                                                 r"ERROR: Could not reach the index \(x\)$"):
        upgrade.arguments.check_on_index("5.24.0")


def test_the_index_is_asked_only_when_the_environment_must_be_built(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(upgrade.arguments, "check_on_index", lambda v: asked.append(v))

    class Stop(Exception):
        pass

    def stop(*a, **k):
        raise Stop

    monkeypatch.setattr(upgrade.environment, "build_env", stop)
    with pytest.raises(Stop):
        upgrade.check("5.24.0", cache=tmp_path, say=lambda _: None)
    assert asked == ["5.24.0"]  # no environment yet: one look-up, before the build
    env = upgrade.environment.env_path("5.24.0", tmp_path)
    _fake_env(env)
    with pytest.raises(Stop):
        upgrade.check("5.24.0", cache=tmp_path, say=lambda _: None)
    assert asked == ["5.24.0"]  # cached: no look-up at all (works offline)


def test_a_real_look_up_of_a_release_that_does_not_exist():
    try:
        upgrade.arguments.check_on_index("5.24.0")
    except upgrade.UsageError as exc:
        pytest.skip(f"no index here: {exc}")
    with pytest.raises(upgrade.UsageError, match=r"^transformers 9\.9\.9 is not on the package index \(the newest "
                                                 r"there is [0-9.]+\)$"):
        upgrade.arguments.check_on_index("9.9.9")


# -- the cache ------------------------------------------------------------------------------------------------------
def _report(version="5.24.0"):
    return {"transformers": version, "torch": "2.13.0", "patches": [
        {"id": "pad-token", "state": "applied", "verdict": "fixed", "affected": ">=4.0", "message": "m",
         "without": {"outcome": "defect"}, "with": {"outcome": "pass"}, "targets": []}]}


@pytest.mark.parametrize("content", ["", '{"transformers": "5.24.0", "patches": [{"id": "pad-to', "[]",
                                     '{"transformers": "5.24.0", "patches": []}',
                                     '{"transformers": "5.24.0", "patches": [{"id": 3}]}', "\x00\x01"])
def test_a_broken_cached_report_is_run_again_and_replaced_atomically(content, tmp_path, monkeypatch):
    cache = tmp_path / "doctor-reports" / "key.json"
    cache.parent.mkdir()
    cache.write_text(content)
    calls = []

    def doctor(cmd, **kwargs):
        calls.append(cmd)
        Path(cmd[cmd.index("--output") + 1]).write_text(json.dumps(_report()))
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(_child, "run", doctor)
    said = []
    assert upgrade.running.run_doctor(sys.executable, tmp_path / "out.json", cache=cache, say=said.append) == _report()
    assert len(calls) == 1 and "does not parse or is incomplete" in said[0]
    assert json.loads(cache.read_text()) == _report()
    assert [p.name for p in cache.parent.iterdir()] == ["key.json"]  # no temporary file left
    assert upgrade.running.run_doctor(sys.executable, tmp_path / "out2.json", cache=cache) == _report()
    assert len(calls) == 1  # now valid: reused


def test_a_doctor_that_writes_no_usable_report_is_one_line_and_caches_nothing(tmp_path, monkeypatch):
    def doctor(cmd, **kwargs):
        Path(cmd[cmd.index("--output") + 1]).write_text('{"transformers": "5.2')
        return subprocess.CompletedProcess(cmd, 1, "", "Traceback\nRuntimeError: boom\n")

    monkeypatch.setattr(_child, "run", doctor)
    with pytest.raises(upgrade.EnvError, match="doctor wrote no usable report.*RuntimeError: boom"):
        upgrade.running.run_doctor(sys.executable, tmp_path / "out.json", cache=tmp_path / "c.json")
    assert not (tmp_path / "c.json").exists()


def test_write_atomic_leaves_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    upgrade.cache.write_atomic(target, "old")
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        upgrade.cache.write_atomic(target, "new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_a_broken_cached_scenario_result_is_run_again(tmp_path, monkeypatch):
    cache = tmp_path / "s.json"
    cache.write_text('{"scenarios": {"greedy": {"tokens": [[1, 2]]')
    good = {"transformers": "5.24.0", "scenarios": {"greedy": {"tokens": [[1]], "scores": []}}, "patches": {}}

    def runner(cmd, **kwargs):
        Path(cmd[-1]).write_text(json.dumps(good))
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(_child, "run", runner)
    out = upgrade.running.run_scenarios(sys.executable, str(tmp_path), tmp_path / "o.json", True, False, cache,
                                say=lambda _: None)
    assert out == good and json.loads(cache.read_text()) == good


def test_a_failed_build_leaves_no_environment_and_no_lock(tmp_path, monkeypatch):
    def pip_fails(cmd):
        if "pip" in cmd and "install" in cmd:
            raise upgrade.EnvError("pip install transformers==5.24.0 failed (1): ERROR: No matching distribution")
        return subprocess.run(cmd, capture_output=True, cwd=_child.private_cwd(), check=True)

    monkeypatch.setattr(upgrade.environment, "_call", pip_fails)
    monkeypatch.setattr(upgrade.environment.shutil, "which", lambda name: None)  # venv + pip, not uv
    with pytest.raises(upgrade.EnvError):
        upgrade.environment.build_env("5.24.0", tmp_path, say=lambda _: None)
    assert list(tmp_path.iterdir()) == []


def test_stale_locks_are_swept_and_held_or_complete_ones_kept(tmp_path):
    import fcntl

    (tmp_path / "9.9.9-torch2-py3.11-abc.lock").write_text("")  # a mistyped release of an earlier run
    done = tmp_path / "5.24.0-torch2-py3.11-abc"
    _fake_env(done)
    (tmp_path / f"{done.name}.lock").write_text("")
    held = tmp_path / "5.23.0-torch2-py3.11-abc.lock"
    with open(held, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # a build running now
        assert upgrade.cache.sweep_locks(tmp_path) == ["9.9.9-torch2-py3.11-abc.lock"]
    assert sorted(p.name for p in tmp_path.glob("*.lock")) == [held.name, f"{done.name}.lock"]


def test_a_truncated_environment_marker_means_rebuild(tmp_path):
    env = tmp_path / "env"
    _fake_env(env)
    assert upgrade.environment.env_ready(env)
    (env / upgrade.cache.MARKER).write_text('{"torch": "2.13')
    assert not upgrade.environment.env_ready(env)


# -- no false green ----------------------------------------------------------------------------------------------------
def _rows(result):
    runs = {k: {"error": "OSError: no file named model.safetensors", "scenarios": {}, "patches": {}}
            for k in ("now-on", "now-off", "there-on", "there-off")}
    if result == "ran":
        good = {n: {"tokens": [[1, 2]], "scores": [[[0.0]]]} for n in SCENARIOS}
        runs = {k: {"scenarios": good, "patches": {}} for k in runs}
    return upgrade.judging.compare_models({"./m": runs}, {})


def test_a_model_that_runs_on_neither_release_is_no_evidence_and_never_a_pass():
    s = upgrade.judging.summarize("5.24.0", "4.57.6", [], _rows("fails"), None)
    assert not s["unsafe"] and s["verdict"] == "no evidence"
    assert s["no_evidence"] == ["no scenario of ./m ran on either release"]
    assert s["lines"][1].startswith("  model ./m: no scenario ran on either release (OSError: no file")
    assert s["lines"][-1] == ("verdict: not shown safe: no scenario of ./m ran on either release "
                              "(nothing was compared)")
    assert upgrade.judging.summarize("5.24.0", "4.57.6", [], _rows("ran"), None)["verdict"] == "pass"


def test_a_candidate_where_pytest_runs_nothing_says_why_for_each_missing_test():
    there = {"outcomes": {}, "lines": {}, "collect_errors": {}, "exit": 4,
             "output_tail": ["ERROR: usage: python -m pytest", "error: unrecognized arguments: --foo"]}
    [reg] = upgrade.judging.explain_regressions(["t.py::a"], there, "/env/bin/python")
    assert reg["there"] == "missing" and reg["lines"][0] == "(pytest ran no test there, exit 4)"
    assert "unrecognized arguments: --foo" in reg["lines"][-1]


def test_no_test_run_is_no_evidence():
    tests = {"now": {}, "there": {}, "regressions": [], "exit_now": 4, "output_now": ["ERROR: file not found: tst"]}
    s = upgrade.judging.summarize("5.24.0", "4.57.6", [], None, tests)
    assert s["verdict"] == "no evidence" and "pytest ran no test on 4.57.6 (exit 4: ERROR: file not found" in \
        s["lines"][1]


def test_the_exit_status_is_1_without_evidence(tmp_path, monkeypatch, capsys):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    monkeypatch.setattr(upgrade, "check", lambda *a, **k: {
        "from": "4.57.6", "to": "5.24.0", "patches": [], "models": _rows("fails"), "tests": None,
        "summary": upgrade.judging.summarize("5.24.0", "4.57.6", [], _rows("fails"), None)})
    assert upgrade.main(["5.24.0", "--model", str(model), "--cache-dir", str(tmp_path / "c")]) == 1
    assert "verdict: not shown safe" in capsys.readouterr().out


# -- regressions explained ----------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_failing_test_has_its_lines_a_pasteable_id_and_a_rerun_command(tmp_path, monkeypatch):
    (tmp_path / "tests" / "sub").mkdir(parents=True)
    (tmp_path / "tests" / "sub" / "test_cache.py").write_text(textwrap.dedent("""\
        import pytest

        class TestCache:
            @pytest.mark.parametrize("n", [1])
            def test_legacy_index(self, n):
                cache = object()
                raise TypeError("'DynamicCache' object is not subscriptable")

        def test_ok():
            pass

        @pytest.fixture
        def broken():
            raise RuntimeError("fixture broke")

        def test_setup_error(broken):
            pass

        def test_skip():
            pytest.skip("not here")

        @pytest.mark.xfail
        def test_xfail():
            assert False
        """))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    monkeypatch.chdir(tmp_path / "tests")  # run from a subfolder: ids relative to it, not to the rootdir
    out = upgrade.running.run_pytest(sys.executable, ["sub"], tmp_path / "r.json")
    tid = "sub/test_cache.py::TestCache::test_legacy_index[1]"
    assert out["outcomes"] == {tid: "failed", "sub/test_cache.py::test_ok": "passed",
                               "sub/test_cache.py::test_setup_error": "error", "sub/test_cache.py::test_skip": "skipped",
                               "sub/test_cache.py::test_xfail": "skipped"}
    assert "E       RuntimeError: fixture broke" in out["lines"]["sub/test_cache.py::test_setup_error"]
    [reg] = upgrade.judging.explain_regressions([tid], out, sys.executable)
    assert reg["error"] == "TypeError: 'DynamicCache' object is not subscriptable"
    assert "sub/test_cache.py:7" in reg["lines"]
    assert reg["rerun"].startswith(f"cd {tmp_path / 'tests'} && ") and reg["rerun"].endswith(f"'{tid}'")
    rerun = subprocess.run(reg["rerun"], shell=True, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 1 and "1 failed" in rerun.stdout, rerun.stdout[-2000:]


@pytest.mark.slow
def test_a_module_that_no_longer_imports_explains_its_missing_tests(tmp_path, monkeypatch):
    (tmp_path / "test_imp.py").write_text("from transformers import NoSuchThingAnywhere\n\ndef test_a():\n    pass\n")
    monkeypatch.chdir(tmp_path)
    out = upgrade.running.run_pytest(sys.executable, ["test_imp.py"], tmp_path / "r.json")
    [reg] = upgrade.judging.explain_regressions(["test_imp.py::test_a"], out, sys.executable)
    assert reg["there"] == "missing" and "NoSuchThingAnywhere" in " ".join(reg["lines"])


# -- your packages and PYTHONPATH ------------------------------------------------------------------------------------------
def _dist(site, name, files, direct_url):
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "direct_url.json").write_text(json.dumps(direct_url))
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in [*files, f"{info.name}/METADATA",
                                                              f"{info.name}/direct_url.json"]))


def test_editable_and_local_installs_are_your_packages(tmp_path, monkeypatch):
    site = tmp_path / "site"
    src = tmp_path / "proj" / "src"
    (src / "mine").mkdir(parents=True)
    (src / "mine" / "__init__.py").write_text("WHO = 'mine'\n")
    # setuptools' path-style editable, setuptools' finder-style editable, a plain `pip install ./lib`
    _dist(site, "mine", ["__editable__.mine-0.1.pth"], {"url": f"file://{tmp_path}/proj", "dir_info": {"editable": True}})
    (site / "__editable__.mine-0.1.pth").write_text(f"{src}\n")
    (site / "finder_pkg").mkdir()
    _dist(site, "finderpkg", ["__editable__.finderpkg-0.1.pth", "__editable___finderpkg_finder.py"],
          {"url": f"file://{tmp_path}/f", "dir_info": {"editable": True}})
    (site / "__editable__.finderpkg-0.1.pth").write_text("import __editable___finderpkg_finder; "
                                                         "__editable___finderpkg_finder.install()\n")
    (site / "__editable___finderpkg_finder.py").write_text(
        "import sys, types\ndef install():\n    sys.modules['finderpkg'] = types.SimpleNamespace(WHO='finder')\n")
    _dist(site, "locallib", ["locallib/__init__.py"], {"url": f"file://{tmp_path}/lib", "dir_info": {}})
    (site / "locallib").mkdir()
    (site / "locallib" / "__init__.py").write_text("WHO = 'local'\n")
    _dist(site, "fromindex", ["fromindex/__init__.py"], {"url": "https://example.org/x.whl",
                                                         "archive_info": {}})
    monkeypatch.syspath_prepend(str(site))
    mine = dict(upgrade.environment.user_distributions())
    assert {k: mine[k] for k in ("mine", "finderpkg", "locallib")} == {"mine": True, "finderpkg": True,
                                                                       "locallib": False}
    assert "fromindex" not in mine and "transformers" not in mine and "hf-genfix" not in mine
    assert upgrade.environment.editable_path_lines("mine") == [str(src)]

    # A real interpreter of a fresh venv imports all three through what link_user_packages writes.
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, cwd=_child.private_cwd())
    python = upgrade.environment.env_python(env)
    monkeypatch.setattr(upgrade.environment, "user_distributions", lambda: [("mine", True), ("finderpkg", True),
                                                                ("locallib", False)])
    assert upgrade.environment.link_user_packages(python, say=lambda _: None) == ["mine (editable)", "finderpkg (editable)",
                                                                      "locallib"]
    out = subprocess.run(_child.argv(str(python), "-c", "import mine, finderpkg, locallib; "
                                     "print(mine.WHO, finderpkg.WHO, locallib.WHO)"),
                         capture_output=True, text=True, cwd=_child.private_cwd(), env=upgrade.environment.quiet_env(str(python)))
    assert out.stdout.split() == ["mine", "finder", "local"], out.stderr


def test_pythonpath_reaches_the_candidate_absolute_without_a_transformers(tmp_path, monkeypatch):
    other = tmp_path / "old-site"
    (other / "transformers").mkdir(parents=True)
    (other / "transformers" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["src", str(other)]))
    candidate = str(tmp_path / "env" / "bin" / "python")
    assert upgrade.environment.quiet_env(candidate, user_path=True)["PYTHONPATH"] == str(tmp_path / "src")
    assert "PYTHONPATH" not in upgrade.environment.quiet_env(candidate)  # doctor: hf_genfix and transformers only
    assert upgrade.environment.quiet_env(sys.executable)["PYTHONPATH"] == os.pathsep.join([str(tmp_path / "src"), str(other)])
    assert "PYTHONPATH=" + str(tmp_path / "src") in upgrade.running.rerun_command(candidate, "t.py::a")


# -- a fake candidate environment, for the end-to-end checks ---------------------------------------------------------------
def _fake_env(env: Path, real: bool = False) -> Path:
    """A complete environment as build_env leaves it. ``real``: a venv whose interpreter imports this one's
    packages (the same transformers: the check then compares a release with itself)."""
    env.mkdir(parents=True, exist_ok=True)
    if real:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True,
                       cwd=_child.private_cwd())
        site = Path(subprocess.run([str(upgrade.environment.env_python(env)), "-c", "import sysconfig; "
                                    "print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True,
                                   cwd=_child.private_cwd()).stdout.strip())
        (site / "this_interpreter.pth").write_text("\n".join(p for p in sys.path if p and os.path.isdir(p)) + "\n")
    else:
        python = upgrade.environment.env_python(env)
        python.parent.mkdir(parents=True, exist_ok=True)
        python.write_text("")
    (env / upgrade.cache.MARKER).write_text(json.dumps({"torch": "2.13.0", "transformers": "5.24.0"}))
    return env


PLANTED = ("uuid", "difflib", "packaging", "json", "typing", "subprocess", "tempfile", "random", "inspect",
           "importlib", "dataclasses", "enum", "functools", "warnings", "wrapt", "torch", "transformers", "hf_genfix",
           "tomllib", "argparse", "textwrap", "traceback", "contextlib", "sysconfig", "site", "sitecustomize",
           "usercustomize", "re", "shlex", "pytest", "_pytest", "safetensors", "numpy", "tokenizers")


@pytest.mark.slow
def test_nothing_planted_in_the_folder_runs(tmp_path):
    """upgrade-check run from a folder holding modules named like every module its children import (and a
    pytest suite beside them): no child imports one. The candidate is a venv over this interpreter's
    packages; doctor, the scenarios of a tiny saved Llama and the tests run for real."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    hostile = tmp_path / "clone"
    (hostile / "tests").mkdir(parents=True)
    marker = tmp_path / "IMPORTED"
    for name in PLANTED:
        (hostile / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n")
    (hostile / "tests" / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                   num_attention_heads=2, num_key_value_heads=1)
    transformers.LlamaForCausalLM(cfg).save_pretrained(hostile / "ckpt")
    for name in PLANTED[:6]:
        (hostile / "ckpt" / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write('ckpt/{name}\\n')\n")
    cache = tmp_path / "cache"
    version = transformers.__version__
    _fake_env(upgrade.environment.env_path(version, cache), real=True)
    hf_genfix_script = Path(sys.executable).parent / "hf-genfix"
    cmd = [str(hf_genfix_script), "upgrade-check", version, "--model", "ckpt", "--cache-dir", str(cache),
           "--json", "--", "pytest", "tests"]
    proc = subprocess.run(cmd, cwd=hostile, capture_output=True, text=True, timeout=1500,
                          env=dict(os.environ, PYTHONPATH=""))
    assert not marker.exists(), (marker.read_text(), proc.stderr[-3000:])
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["tests"]["now"] == {"tests/test_ok.py::test_ok": "passed"} == result["tests"]["there"]
    assert {r["scenario"] for r in result["models"]} == set(SCENARIOS)
    assert result["summary"]["verdict"] == "pass", result["summary"]["lines"]


# -- the tokenizer ------------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_scenarios_go_through_the_folders_tokenizer(tmp_path):
    """A tiny Llama with a tokenizer without a pad token: the tokenizer scenarios run through it, and a changed
    padding side (as a release that changes its default would give) changes their tokens."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    tokenizers = pytest.importorskip("tokenizers")
    from hf_genfix import upgrade_scenarios

    words = "The the quick brown fox jumps over lazy dog and then Hello , user".split()
    vocab = {w: i for i, w in enumerate(["<unk>", "<s>", "</s>", "<pad>"] + words)}
    tk = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    ckpt = tmp_path / "llama"
    cfg = transformers.LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                   num_attention_heads=2, num_key_value_heads=1, bos_token_id=1, eos_token_id=2)
    transformers.LlamaForCausalLM(cfg).save_pretrained(ckpt)
    transformers.PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                         padding_side="left").save_pretrained(ckpt)
    left = upgrade_scenarios.run(str(ckpt))
    # hf_genfix is active in this process: pad-token gives the tokenizer its eos as pad token where it applies;
    # without it, padding raises upstream's "no padding token" error, which the scenario reports.
    assert left["tokenizer"]["pad_token"] in (None, "</s>") and left["tokenizer"]["padding_side"] == "left"
    assert "tokenizer-batch" in left["scenarios"] and "chat-template" not in left["scenarios"]
    batch = left["scenarios"]["tokenizer-batch"]
    assert ("padding token" in batch["error"]) if left["tokenizer"]["pad_token"] is None else batch["tokens"]
    config = json.loads((ckpt / "tokenizer_config.json").read_text())
    config.update(pad_token="<pad>")
    (ckpt / "tokenizer_config.json").write_text(json.dumps(config))
    import hf_genfix

    with hf_genfix.disabled():  # upstream: with hf_genfix, right-padding makes both sides give the same tokens
        padded_left = upgrade_scenarios.run(str(ckpt))
        config.update(padding_side="right")
        (ckpt / "tokenizer_config.json").write_text(json.dumps(config))
        padded_right = upgrade_scenarios.run(str(ckpt))
    facts = upgrade.judging.tokenizer_facts({"now-on": padded_left, "there-on": padded_right, "now-off": padded_left,
                                     "there-off": padded_right})
    assert facts["changed"] == {"padding_side": ["left", "right"], "upstream padding_side": ["left", "right"]}
    assert "CHANGED: padding_side 'left' -> 'right'" in facts["summary"]
    c = upgrade.judging.compare_scenario(padded_left["scenarios"]["tokenizer-batch"],
                                 padded_right["scenarios"]["tokenizer-batch"])
    assert c["result"] == "differs" and c["first_step"] == 0
    assert upgrade.judging.compare_scenario(padded_left["scenarios"]["greedy"],
                                    padded_right["scenarios"]["greedy"])["result"] == "identical"
