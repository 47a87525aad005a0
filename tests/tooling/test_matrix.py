"""scripts/matrix.py: the compat report, its disagreement check, the upgrade diff and the generated CI workflow.

The report is tested on recorded doctor reports (fixtures/results, three releases of two fixture patches whose
manifests are fixtures/patches) and on variants of them where the observation contradicts a manifest.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from doctor_fixture import make_registry  # noqa: F401 - a fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).with_name("fixtures")
RELEASES = ["4.57.6", "5.12.0", "5.14.0"]


def _load_matrix():
    spec = importlib.util.spec_from_file_location("genfix_matrix_script", ROOT / "scripts" / "matrix.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


matrix = _load_matrix()


@pytest.fixture
def results(tmp_path):
    target = tmp_path / "results"
    shutil.copytree(FIXTURES / "results", target)
    return target


def run_report(results_dir: Path, tmp_path: Path, expected=RELEASES) -> tuple[int, str, dict]:
    md, data = tmp_path / "compat-matrix.md", tmp_path / "compat-matrix.json"
    code = matrix.rendering.report(results_dir, md, data, expected=expected, patches_dir=FIXTURES / "patches",
                         versions_published=RELEASES)
    return code, md.read_text(), json.loads(data.read_text())


def edit(results_dir: Path, release: str, pid: str, **changes) -> None:
    path = results_dir / f"tf-{release}.json"
    report = json.loads(path.read_text())
    (patch,) = [p for p in report["patches"] if p["id"] == pid]
    for key, value in changes.items():
        patch[key] = value
    path.write_text(json.dumps(report))


def test_recorded_results_agree_with_the_manifests(results, tmp_path, capsys):
    code, md, data = run_report(results, tmp_path)
    assert code == 0, capsys.readouterr().out
    assert data["releases"] == RELEASES
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[3:-1]]
            for line in md.splitlines() if line[:3] in ("| 4", "| 5")}
    # a row per release: fixed here | not needed (count) | n/a | disagreements | boundaries
    assert rows == {
        "4.57.6": ["`fake-pad`", "1", "-", "-", "-"],
        "5.12.0": ["`fake-pad`, `fake-window`", "0", "-", "-", "`fake-window` starts ✓"],
        "5.14.0": ["`fake-pad`", "1", "-", "-", "`fake-window` ends ✓"],
    }
    assert "## Boundaries: 2 of 2 confirmed" in md
    assert "Disagreements: 0." in md and "Do not edit by hand" in md


def test_defect_outside_the_range_fails_the_report(results, tmp_path, capsys):
    # 5.14.0 still shows the crash: the manifest's "<5.14.0" is wrong.
    edit(results, "5.14.0", "fake-window", without={"outcome": "defect", "message": "ValueError: Cannot crop"},
         verdict="catalog-wrong")
    code, md, _ = run_report(results, tmp_path)
    out = capsys.readouterr().out
    assert code == 1
    assert "fake-window on transformers 5.14.0: defect observed, but affected '>=5.12.0,<5.14.0' excludes" in out
    assert "**defect / catalog wrong**" in md and "Disagreements: 1." in md
    assert "`fake-window` ends ✗" in md and "**not confirmed**" in md


def test_range_wider_than_the_defect_fails_the_report(results, tmp_path, capsys):
    edit(results, "5.12.0", "fake-window", without={"outcome": "pass"}, verdict="not-reproduced")
    code, md, _ = run_report(results, tmp_path)
    assert code == 1
    assert "includes this release, but the probe sees no defect" in capsys.readouterr().out
    assert "**no defect / range wrong**" in md


@pytest.mark.parametrize("change, words", [
    (dict(with_={"outcome": "defect", "message": "still wrong"}), "its probe still fails"),
    (dict(without={"outcome": "error", "message": "KeyError"}), "the probe errored"),
    (dict(affected=">=4.0"), "rerun tox -e tf-5.12.0"),
])
def test_other_failures_fail_the_report(results, tmp_path, capsys, change, words):
    edit(results, "5.12.0", "fake-pad", **{k.rstrip("_"): v for k, v in change.items()})
    code, _, _ = run_report(results, tmp_path)
    assert code == 1 and words in capsys.readouterr().out


def test_a_missing_release_fails_the_report(results, tmp_path, capsys):
    code, _, _ = run_report(results, tmp_path, expected=RELEASES + ["5.24.0"])
    assert code == 1 and "transformers 5.24.0: no doctor result" in capsys.readouterr().out


def test_upgrade_changes_name_what_moved():
    load = lambda v: matrix.judging.digest(json.loads((FIXTURES / "results" / f"tf-{v}.json").read_text()))  # noqa: E731
    old, new = load("5.12.0"), load("5.14.0")
    found = matrix.judging.changes(old, new)
    assert "fake-window: stops applying (applied on 5.12.0 -> not-needed on 5.14.0)" in found
    assert "fake-window: the defect no longer reproduces on 5.14.0 (fixed upstream?)" in found
    assert any(line.startswith("fake-window: target drifted: transformers.cache_utils:DynamicSlidingWindowLayer"
                               ".crop parameters +layer_idx")
               for line in found)
    assert not any(line.startswith("fake-pad") for line in found)

    regressed = copy.deepcopy(new)
    regressed["patches"]["fake-pad"]["with"] = "defect"
    regressed["patches"]["fake-window"]["without"] = "defect"
    regressed["patches"]["fake-window"]["targets"] = {"transformers.cache_utils:DynamicSlidingWindowLayer.crop": None}
    regressed["sweep_unknown"] = ["mistral / assisted"]
    found = matrix.judging.changes(old, regressed)
    assert any(line.startswith("fake-pad: REGRESSION") for line in found)
    assert "sweep: unknown defect on 5.14.0: mistral / assisted" in found
    assert any("is gone on 5.14.0" in line for line in found)
    assert matrix.judging.changes(old, old) == []


def test_release_list_is_derived_from_the_manifests():
    """tox.ini's env_list is both sides of every boundary of every manifest's range (sync --check fails otherwise)."""
    releases = matrix.release_list.releases()
    assert releases == matrix.release_list.wanted_releases(), "run: python scripts/matrix.py sync"
    assert matrix.release_list.sync(check_only=True) == 0
    assert releases[0] == matrix.release_list.matrix_settings()["oldest_supported"] and releases[-1] == matrix.release_list.published()[-1]
    assert releases == sorted(releases, key=matrix.release_list.release_key) and len(releases) == len(set(releases))
    supported = [v for v in matrix.release_list.published() if matrix.release_list.release_key(v) >= matrix.release_list.release_key(releases[0])]
    for m in matrix.release_list.catalog_manifests():
        for before, after in matrix.release_list.boundary_pairs(m.affected, supported):
            assert before in releases and after in releases, (m.id, before, after)
    assert matrix.release_list.expand("tf-{1.0, 2.0}") == ["tf-1.0", "tf-2.0"]
    suite = matrix.release_list.suite_releases()
    assert suite[0] == releases[0] and suite[-1] == releases[-1] and set(suite) <= set(releases)
    oldest, middle, newest = matrix.release_list.ci_envs()
    assert (oldest, newest) == ("tf-" + suite[0], "tf-" + suite[-1]) and middle in ["tf-" + r for r in suite]
    assert matrix.running.requirement("tf-5.12.0") == "transformers==5.12.0"
    assert matrix.running.requirement("5.25.0rc1") == "transformers==5.25.0rc1"
    assert matrix.running.requirement("./transformers-main.whl") == "./transformers-main.whl"


@pytest.mark.parametrize("spec, pairs", [
    (">=5.12.0,<5.14.0", [("5.11.0", "5.12.0"), ("5.13.1", "5.14.0")]),
    # an exclusion has two boundaries, and a patch release counts as a side of its own
    (">=4.56.0,!=4.57.*,<5.1.0", [("4.55.4", "4.56.0"), ("4.56.2", "4.57.1"), ("4.57.6", "5.0.0"),
                                  ("5.0.0", "5.1.0")]),
    (">=5.15.0,<5.15.2", [("5.14.1", "5.15.0"), ("5.15.1", "5.16.0")]),
    (">=4.40.2", []),
])
def test_boundaries_take_the_release_on_each_side(spec, pairs):
    published = ["4.55.4", "4.56.0", "4.56.2", "4.57.1", "4.57.6", "5.0.0", "5.1.0", "5.11.0", "5.12.0", "5.13.1",
                 "5.14.0", "5.14.1", "5.15.0", "5.15.1", "5.16.0"]
    assert matrix.release_list.boundary_pairs(spec, published) == pairs


def test_derived_list_follows_a_new_manifest(tmp_path):
    patches = tmp_path / "patches"
    shutil.copytree(FIXTURES / "patches", patches)
    published = tmp_path / "releases.txt"
    published.write_text("# test\n4.40.2\n4.57.6\n5.11.0\n5.12.0\n5.13.1\n5.14.0\n5.20.0\n5.24.0\n")
    tox_ini = tmp_path / "tox.ini"
    tox_ini.write_text("[tox]\nenv_list =\n    tf-{5.24.0}\n    report\n[matrix]\noldest_supported = 4.40.2\n")
    # fake-window's range >=5.12.0,<5.14.0 adds 5.11.0 | 5.12.0 and 5.13.1 | 5.14.0
    assert matrix.release_list.wanted_releases(tox_ini, patches, published) == [
        "4.40.2", "5.11.0", "5.12.0", "5.13.1", "5.14.0", "5.24.0"]


def test_upgrade_check_says_what_each_range_would_do():
    load = lambda v: matrix.judging.digest(json.loads((FIXTURES / "results" / f"tf-{v}.json").read_text()))  # noqa: E731
    manifests = matrix.release_list.catalog_manifests(FIXTURES / "patches")
    new = load("5.14.0")
    verdicts = matrix.judging.range_verdicts(manifests, new)
    assert "`fake-pad`: still present on 5.14.0 (inside >=4.40.0)" in verdicts
    assert any(v.startswith("`fake-window`: ") and "matches the manifest" in v for v in verdicts)
    moved = copy.deepcopy(new)
    moved["patches"]["fake-window"]["without"] = "defect"
    moved["patches"]["fake-pad"]["without"] = "pass"
    verdicts = matrix.judging.range_verdicts(manifests, moved)
    assert any("fake-window" in v and "EXTEND the range to 5.14.0" in v for v in verdicts)
    assert any("fake-pad" in v and "CLOSE the range (<5.14.0)" in v for v in verdicts)


def test_doctor_reports_feed_the_matrix(make_registry):
    """What the doctor really writes (not a recorded fixture) has what digest() reads."""
    pytest.importorskip("transformers")
    from hf_genfix import doctor

    report = json.loads(json.dumps(doctor.diagnose(make_registry("fixed-here", "unaffected-but-defect"))))
    row = matrix.judging.digest(report)
    assert row["transformers"] == report["transformers"]
    for p in report["patches"]:
        assert set(row["patches"][p["id"]]) == {"state", "affected", "without", "with", "verdict", "message",
                                                "targets"}
    assert row["patches"]["fixed-here"]["without"] == "defect" and row["patches"]["fixed-here"]["with"] == "pass"
    assert row["patches"]["unaffected-but-defect"]["verdict"] == "catalog-wrong"


def test_sweep_of_the_newest_release_is_recorded_and_is_the_upgrade_baseline(results, tmp_path):
    path = results / "tf-5.14.0.json"
    report = json.loads(path.read_text())
    report["sweep"] = {"unknown": [{"arch": "rwkv", "scenario": "left-padded"}], "unusable": {"jamba": "crash"},
                       "known": [{"arch": "xglm", "scenario": "beam", "explained_by": "model-xglm-positions"}]}
    path.write_text(json.dumps(report))
    code, md, data = run_report(results, tmp_path)
    assert code == 0  # the sweep informs; only the catalog's disagreements fail the report
    assert data["results"]["5.14.0"]["sweep_known"] == ["xglm / beam (model-xglm-positions)"]  # the patch named
    assert "`hf-genfix doctor --sweep` on 5.14.0: 2 unknown defect(s): `jamba / every scenario`, " \
           "`rwkv / left-padded`." in md
    tox_ini = tmp_path / "tox.ini"
    tox_ini.write_text("[tox]\nenv_list =\n    tf-{4.57.6,5.12.0,5.14.0}\n    report\n")
    old = matrix.judging.baseline(tmp_path / "no-fresh-results", tmp_path / "compat-matrix.json", tox_ini)
    assert old == data["results"]["5.14.0"]
    new = copy.deepcopy(old)
    new["transformers"], new["sweep_unknown"] = "5.15.0", old["sweep_unknown"] + ["llama / beam"]
    assert matrix.judging.changes(old, new) == ["sweep: unknown defect on 5.15.0: llama / beam"]


def test_the_package_ships_the_matrix_range_as_verified():
    """hf_genfix calls a release unverified from patches/verified.json, which `matrix.py sync` writes from
    tox.ini: the oldest supported release and the newest env."""
    from hf_genfix.catalog import verified_range

    releases = matrix.release_list.releases()
    assert verified_range() == (matrix.release_list.matrix_settings()["oldest_supported"], releases[-1])
    assert verified_range() == (releases[0], releases[-1])


def _doctor_env(tmp_path, monkeypatch, release: str, sweep: dict | None, exit_code: int = 0) -> tuple[int, list]:
    """matrix.running.doctor for tf-<release> of a 3-release matrix whose suite is 5.12.0, with hf-genfix doctor faked: it
    writes a report (``sweep`` added where the command asked for one) and exits ``exit_code``."""
    tox_ini = tmp_path / "tox.ini"
    tox_ini.write_text("[tox]\nenv_list =\n    tf-{4.57.6,5.0.0,5.12.0,5.14.0}\n    report\n"
                       "[matrix]\noldest_supported = 4.57.6\nsuite = 5.12.0\n")
    calls: list = []

    def call(cmd):
        calls.append(cmd)
        report = {"ok": True, "patches": [], "transformers": release}
        if "--sweep" in cmd and sweep is not None:
            report["sweep"] = sweep
        Path(cmd[cmd.index("--output") + 1]).write_text(json.dumps(report))
        return exit_code

    monkeypatch.setattr(matrix.running.subprocess, "call", call)
    return matrix.running.doctor(f"tf-{release}", results=tmp_path, tox_ini=tox_ini), calls


GREEN = {"unknown": [], "known": [{"arch": "rwkv", "scenario": "beam", "catalog_wrong": False}], "unsupported": []}


@pytest.mark.parametrize("release,swept", [("4.57.6", True), ("5.0.0", False), ("5.12.0", True),
                                           ("5.14.0", True)])
def test_every_suite_release_runs_the_differential_sweep(tmp_path, monkeypatch, release, swept):
    code, (cmd,) = _doctor_env(tmp_path, monkeypatch, release, GREEN)
    assert code == 0
    assert (cmd[-2:] == ["--sweep", "--differential"]) is swept and ("--sweep" in cmd) is swept
    if swept:
        assert "sweep" in json.loads((tmp_path / f"tf-{release}.json").read_text())


@pytest.mark.parametrize("sweep,exit_code", [
    ({"unknown": [{"arch": "falcon_h1", "scenario": "chunk-after-cache", "verdict": "unknown"}], "known": []}, 1),
    ({"unknown": [{"arch": "llama", "scenario": "cached", "verdict": "worse"}], "known": []}, 1),
    ({"unknown": [], "known": [{"arch": "llama", "scenario": "beam", "catalog_wrong": True}]}, 1),
    (GREEN, 1),  # the sweep's own exit status counts even where the report looks green
    (None, 0),  # no sweep in the report of a suite release
])
def test_a_failing_sweep_fails_the_env(tmp_path, monkeypatch, capsys, sweep, exit_code):
    code, _ = _doctor_env(tmp_path, monkeypatch, "5.12.0", sweep, exit_code)
    assert code == 1
    assert "doctor --sweep --differential FAILED" in capsys.readouterr().out


def test_a_failing_sweep_of_a_doctor_only_release_is_not_run(tmp_path, monkeypatch):
    bad = {"unknown": [{"arch": "llama", "scenario": "cached", "verdict": "worse"}], "known": []}
    code, (cmd,) = _doctor_env(tmp_path, monkeypatch, "5.0.0", bad)
    assert code == 0 and "--sweep" not in cmd


# -- the torch axis: a release judged with the torch of its time too (tox.ini's tf-X-torchY envs) ---------------
def test_an_env_named_with_a_torch_installs_that_torch(tmp_path, monkeypatch):
    assert matrix.release_list.split_env("tf-4.46.3-torch2.5.1") == ("4.46.3", "2.5.1")
    assert matrix.release_list.split_env("tf-5.12.0") == ("5.12.0", None) and matrix.release_list.split_env("5.25.0rc1") == ("5.25.0rc1", None)
    assert matrix.running.requirement("tf-4.46.3-torch2.5.1") == "transformers==4.46.3"
    torches, pips = [], []
    monkeypatch.setattr(matrix.running, "shared_torch", lambda root, spec: torches.append(spec) or 0)
    monkeypatch.setattr(matrix.running.subprocess, "call", lambda cmd: pips.append(cmd[-1]) or 0)
    # the name wins over GENFIX_TORCH (the default torch of the other envs)
    assert matrix.running.install("tf-4.46.3-torch2.5.1", tmp_path, "torch==2.13.0") == 0
    assert matrix.running.install("tf-4.57.6", tmp_path, "torch==2.13.0") == 0
    assert torches == ["torch==2.5.1", "torch==2.13.0"]
    assert pips == ["transformers==4.46.3", "transformers==4.57.6"]


def test_the_eras_of_tox_ini_are_suite_releases_outside_env_list():
    """Each era env judges a suite release (it runs the sweep and the tests there) with another torch; none is in
    env_list (CI, `matrix.py all`), and `tox -e` knows each one by the section tox.ini names them in."""
    eras = matrix.release_list.eras()
    assert eras, "tox.ini has no eras label"
    releases = {matrix.release_list.split_env(e) for e in eras}
    assert all(torch is not None and release in matrix.release_list.suite_releases() for release, torch in releases)
    assert not set(eras) & set(matrix.release_list.env_names())
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    parser.read(matrix.files.TOX_INI, encoding="utf-8")
    sections = [n for s in parser.sections() if s.startswith("testenv:tf-") for n in matrix.release_list.expand(s[len("testenv:"):])]
    assert sections == eras


def _era_result(results: Path, release: str, torch: str, **changes) -> None:
    """tf-<release>-torch<torch>.json: the release's recorded report, run with another torch, ``changes`` applied to
    fake-window."""
    report = json.loads((results / f"tf-{release}.json").read_text())
    report["torch"] = f"{torch}+cu124"
    (patch,) = [p for p in report["patches"] if p["id"] == "fake-window"]
    patch.update(changes)
    (results / f"tf-{release}-torch{torch}.json").write_text(json.dumps(report))


def test_a_torch_axis_column_is_its_own_row_compared_with_the_default_torch(results, tmp_path, capsys):
    _era_result(results, "5.12.0", "2.9.1", without={"outcome": "pass"}, verdict="not-reproduced")
    code, md, data = run_report(results, tmp_path)
    out = capsys.readouterr().out
    assert code == 1  # a range that torch 2.9.1 does not confirm is a disagreement like any other
    assert "fake-window on transformers 5.12.0 with torch 2.9.1+cu124: affected" in out
    table = md.split("## Boundaries", 1)[0]
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in table.splitlines() if line[:3] == "| 5"}
    assert rows["5.12.0"] == "2.13.0+cpu" and rows["5.12.0-torch2.9.1"] == "2.9.1+cu124"
    assert data["releases"] == RELEASES and list(data["results"]) == RELEASES
    assert list(data["torch_axis"]) == ["5.12.0-torch2.9.1"]
    assert data["judged_torch"]["5.12.0"] == ["2.13.0+cpu", "2.9.1+cu124"]
    assert data["judged_torch"]["4.57.6"] == ["2.13.0+cpu"]
    axis = md.split("## The torch axis", 1)[1]
    assert ("| 5.12.0 | 2.9.1+cu124 | 2.13.0+cpu | `fake-window`: defect / fixed (fixed) → **no defect / range "
            "wrong** (not-reproduced) |") in axis
    # the boundary marks stay on the default-torch rows
    assert "`fake-window` starts ✓" in md


def test_a_quick_sweep_is_not_compared_with_a_whole_one(results, tmp_path):
    for name, quick in (("tf-5.12.0.json", False), ("tf-5.12.0-torch2.9.1.json", True)):
        if name != "tf-5.12.0.json":
            _era_result(results, "5.12.0", "2.9.1")
        path = results / name
        report = json.loads(path.read_text())
        report["sweep"] = {"quick": quick, "known": [], "unusable": {},
                           "unknown": [] if quick else [{"arch": "rwkv", "scenario": "beam"}]}
        path.write_text(json.dumps(report))
    _, md, data = run_report(results, tmp_path)
    assert data["torch_axis"]["5.12.0-torch2.9.1"]["sweep_quick"] is True
    assert "sweep_quick" not in data["results"]["5.12.0"]
    assert "- `hf-genfix doctor --sweep --quick` on 5.12.0-torch2.9.1: 0 unknown defect(s)." in md
    assert ("| none | quick sweep: 0 unknown, not compared | whole sweep: 1 unknown, not compared |"
            in md.split("## The torch axis", 1)[1])
    report = json.loads((results / "tf-5.12.0.json").read_text())
    del report["sweep"]  # a release whose default-torch env ran doctor only
    (results / "tf-5.12.0.json").write_text(json.dumps(report))
    _, md, _ = run_report(results, tmp_path)
    assert "| none | 0 unknown, not compared | not swept with the default torch |" in md


def test_a_torch_axis_column_without_a_fresh_result_is_kept_from_the_committed_matrix(results, tmp_path):
    _era_result(results, "5.12.0", "2.9.1")
    code, md, data = run_report(results, tmp_path)
    assert code == 0 and "5.12.0-torch2.9.1" in data["torch_axis"]
    (results / "tf-5.12.0-torch2.9.1.json").unlink()
    md_path, data_path = tmp_path / "compat-matrix.md", tmp_path / "compat-matrix.json"
    kwargs = dict(expected=RELEASES, patches_dir=FIXTURES / "patches", versions_published=RELEASES)
    assert matrix.rendering.report(results, md_path, data_path, era_envs=["tf-5.12.0-torch2.9.1"], **kwargs) == 0
    assert md_path.read_text() == md and json.loads(data_path.read_text()) == data
    # an era tox.ini no longer lists goes; so does a release's column unless --keep-committed
    (results / "tf-5.14.0.json").unlink()
    assert matrix.rendering.report(results, md_path, data_path, era_envs=[], **kwargs) == 1
    assert "torch_axis" in data and json.loads(data_path.read_text())["torch_axis"] == {}
    data_path.write_text(json.dumps(data))
    assert matrix.rendering.report(results, md_path, data_path, era_envs=[], keep_committed=True, **kwargs) == 0
    assert json.loads(data_path.read_text())["results"]["5.14.0"] == data["results"]["5.14.0"]


def test_the_torch_each_release_was_judged_with_ships_for_the_upgrade_check(results, tmp_path, monkeypatch):
    """report writes every torch per release (patches/judged-torch.json, shipped with the manifests); the catalog
    says when the user's torch is none of them."""
    from hf_genfix import catalog

    _era_result(results, "5.12.0", "2.9.1")
    judged = tmp_path / "shipped" / catalog.JUDGED_TORCH
    judged.parent.mkdir()
    md, data = tmp_path / "compat-matrix.md", tmp_path / "compat-matrix.json"
    assert matrix.rendering.report(results, md, data, expected=RELEASES, patches_dir=FIXTURES / "patches",
                         versions_published=RELEASES, judged=judged) == 0
    assert json.loads(judged.read_text())["releases"] == json.loads(data.read_text())["judged_torch"]
    monkeypatch.setattr(catalog, "manifest_dir", lambda: str(judged.parent))
    assert catalog.judged_torch("5.12.0") == ["2.13.0+cpu", "2.9.1+cu124"]
    assert catalog.torch_not_judged("5.12.0", "2.13.0+cpu") is None
    assert catalog.torch_not_judged("5.12.0", "2.9.1+cpu") is None  # another build of a torch it was judged with
    line = catalog.torch_not_judged("4.57.6", "2.9.1+cu124")
    assert line == ("torch 2.9.1+cu124 is none of the torch versions the matrix judged transformers 4.57.6 with "
                    "(2.13.0+cpu): a probe's verdict can change with torch: run `hf-genfix doctor` with your torch")
    assert catalog.torch_not_judged("5.99.0", "2.9.1") is None  # no column: outside_verified says it
    monkeypatch.setattr(catalog, "manifest_dir", lambda: str(tmp_path / "nowhere"))
    assert catalog.torch_not_judged("5.12.0", "2.10.0") is None  # a broken install: no data, no claim


def test_the_shipped_torch_versions_are_the_committed_matrix():
    committed = json.loads(matrix.files.MATRIX_JSON.read_text())
    assert json.loads(matrix.files.JUDGED.read_text())["releases"] == committed["judged_torch"], \
        "run: python scripts/matrix.py report"
