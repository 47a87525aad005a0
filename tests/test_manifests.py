"""Every manifest in patches/ is valid, names a fix and a probe that import, and the wheel ships them."""

from __future__ import annotations

import importlib
import zipfile
from pathlib import Path

import pytest

from hf_genfix._manifest import ManifestError, load_dir, load_file, parse
from hf_genfix.catalog import FAMILIES, folder

ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = load_dir(ROOT / "patches")


def _callable(ref: str):
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("manifest", MANIFESTS, ids=[m.id for m in MANIFESTS])
def test_manifest_fix_and_probe_exist(manifest):
    assert callable(_callable(manifest.fix))
    assert callable(_callable(manifest.probe))
    assert manifest.family in FAMILIES
    assert manifest.evidence["scenario"] and manifest.evidence["observed"]


def test_patch_ids_cover_the_issues():
    ids = {m.id for m in MANIFESTS}
    assert {"right-padding", "pad-token", "padding-side", "prepare-inputs", "legacy-cache"} <= ids
    by_family = {f: {m.id for m in MANIFESTS if m.family == f} for f in FAMILIES}
    assert all(by_family.values()), by_family
    # An id keeps its first name (a public switch); its family says where it belongs now.
    assert all(pid.startswith("sliding-window-") for pid in by_family["sliding-window"])
    assert all(pid.startswith("remote-code-") for pid in by_family["remote-code"])
    assert all(pid.startswith(("decoding-", "drafting-")) for pid in by_family["decoding"])
    assert all(pid.startswith("model-") for pid in by_family["models"])
    assert not any(pid.startswith("remote-code-") for f, ids in by_family.items() if f != "remote-code" for pid in ids)


@pytest.mark.parametrize("manifest", MANIFESTS, ids=[m.id for m in MANIFESTS])
def test_a_patch_is_one_folder(manifest):
    """patches/<family>/<id>/: manifest.toml, fix.py (install), probe.py (probe), program.py and its own test;
    the folder gives the id, the family and where the code is, and the manifest says none of them."""
    here = ROOT / "patches" / folder(manifest.family) / manifest.id.replace("-", "_")
    assert Path(manifest.path) == here / "manifest.toml"
    code = f"hf_genfix._patches.{folder(manifest.family)}.{here.name}"
    assert (manifest.fix, manifest.probe) == (f"{code}.fix:install", f"{code}.probe:probe")
    assert (here / "fix.py").is_file() and (here / "probe.py").is_file() and (here / "program.py").is_file()
    test = here / f"test_{here.name}.py"
    assert test.is_file() and "(PatchTests)" in test.read_text(), f"{manifest.id}: its own test, {test.name}"
    said = [line.split("=")[0].strip() for line in (here / "manifest.toml").read_text().splitlines()
            if line.split("=")[0].strip() in ("id", "family", "fix", "probe")]
    assert not said, f"{manifest.id}: the folder gives {said}"


@pytest.mark.parametrize("manifest", MANIFESTS, ids=[m.id for m in MANIFESTS])
def test_a_patch_names_one_models_module_at_most(manifest):
    """The registry installs a patch once every module its manifest names is imported. A program that uses one model
    never imports another model's module: a patch on two models' forwards would wait, armed, for ever in a program that
    uses one of them (session 40's first cut of the LLaVA-family patch, caught by the sweep's workers). One patch per
    model; the modules every generate() imports (generation.utils, modeling_utils, cache_utils, auto) may join."""
    models = {m for m in manifest.target_modules
              if m.startswith("transformers.models.") and not m.startswith("transformers.models.auto.")}
    assert len(models) <= 1, f"{manifest.id}: {sorted(models)}: one patch per model (a shared module for the code)"


def test_the_catalog_is_one_tree():
    """patches/ holds one folder per family and nothing loose but the catalog's data files; a family's folder holds
    its patches' folders and its shared modules (shared/); the code that was src/hf_genfix/fixes/ lives there."""
    names = {folder(f) for f in FAMILIES}
    assert {p.name for p in (ROOT / "patches").iterdir() if p.is_dir() and p.name != "__pycache__"} == names
    assert not list((ROOT / "patches").glob("*.toml")) and not list((ROOT / "patches").glob("*/*.toml"))
    assert not (ROOT / "src" / "hf_genfix" / "fixes").exists()
    for family in names:
        for entry in (ROOT / "patches" / family).iterdir():
            assert entry.name in ("__pycache__", "shared") or (entry.is_dir() and (entry / "manifest.toml").is_file()), (
                f"{entry}: neither a patch's folder nor the family's shared/")


def test_a_manifest_in_a_folder_names_no_id(tmp_path):
    here = tmp_path / "padding" / "x_y"
    here.mkdir(parents=True)
    body = ('summary = "s"\ntargets = ["m:A.b"]\naffected = ">=1"\n[evidence]\nscenario = "s"\n'
            'observed = "o"\n')
    (here / "manifest.toml").write_text(body)
    m = load_file(here / "manifest.toml")
    assert (m.id, m.family, m.fix) == ("x-y", "padding", "hf_genfix._patches.padding.x_y.fix:install")
    (here / "manifest.toml").write_text('id = "x-y"\n' + body)
    with pytest.raises(ManifestError, match="folder gives them"):
        load_file(here / "manifest.toml")


def test_after_orders_the_stack(tmp_path):
    def write(pid: str, after: list[str]) -> None:
        here = tmp_path / "padding" / pid.replace("-", "_")
        here.mkdir(parents=True)
        (here / "manifest.toml").write_text(
            f'summary = "s"\ntargets = ["m:A.b"]\naffected = ">=1"\nafter = {after!r}\n'.replace("'", '"')
            + '[evidence]\nscenario = "s"\nobserved = "o"\n')

    write("c-one", [])
    write("a-two", ["c-one"])
    write("b-three", [])
    assert [m.id for m in load_dir(tmp_path)] == ["b-three", "c-one", "a-two"]
    write("d-four", ["e-five"])
    with pytest.raises(ManifestError, match="unknown patch"):
        load_dir(tmp_path)


def test_wrappers_on_one_target_are_ordered_by_the_manifests():
    """Two patches that wrap one target stack in an order a manifest states (``after``), not by their ids."""
    by_target: dict[str, list[str]] = {}
    for m in MANIFESTS:
        for target in m.targets:
            qualname = target.partition(":")[2]
            if "." in qualname or not qualname[0].isupper():  # a class alone is named for its subclass hooks
                by_target.setdefault(target, []).append(m.id)
    below = {m.id: set(m.after) for m in MANIFESTS}  # then closed: every patch a patch stacks on, however far
    for _ in MANIFESTS:
        for pid in below:
            below[pid] |= {q for p in below[pid] for q in below[p]}
    loose = [(target, a, b) for target, ids in by_target.items() for i, a in enumerate(ids) for b in ids[i + 1:]
             if a not in below[b] and b not in below[a]]
    assert not loose, "say which wraps which (after = [...]): " + "; ".join(f"{t}: {a}, {b}" for t, a, b in loose)


GOOD = dict(id="x-y", summary="s", family="padding", targets=["m:A.b"], affected=">=1.0",
            fix="m:f", probe="m:p", evidence={"scenario": "s", "observed": "o"})


@pytest.mark.parametrize(
    "change, message",
    [
        ({"colour": "red"}, "unknown key"),
        ({"affected": ">=5.0,<<6"}, "PEP 440"),
        ({"fix": None}, "missing key"),
        ({"id": "Bad_Id"}, "kebab-case"),
        ({"id": "strict"}, "collides"),
        ({"targets": ["no-colon"]}, "targets"),
        ({"family": "other"}, "family"),
        ({"evidence": {"scenario": "only"}}, "evidence"),
        ({"fixed_upstream": {"ref": "#1"}}, "fixed_upstream"),
        ({"fixed_upstream": "5.1.0"}, "fixed_upstream must be a table"),
        ({"fixed_upstream": {"version": "4.57.0 (4.56 cause); 5.1.0 (5.0 cause)"}}, "not a PEP 440 version"),
        ({"fixed_upstream": {"version": 5.1}}, "version string or a non-empty list"),
        ({"fixed_upstream": {"version": []}}, "version string or a non-empty list"),
        ({"fixed_upstream": {"version": ["4.57.0", "soon"], "reason": "r"}}, "'soon' is not a PEP 440"),
        ({"fixed_upstream": {"version": ["5.1.0", "4.57.0"], "reason": "r"}}, "oldest first"),
        ({"fixed_upstream": {"version": ["4.57.0", "5.1.0"]}}, "fixed_upstream.reason"),
        ({"fixed_upstream": {"version": "5.1.0", "ref": ""}}, "fixed_upstream.ref must be"),
        ({"fixed_upstream": {"version": "5.1.0", "reason": 3}}, "fixed_upstream.reason must be"),
        ({"fixed_upstream": {"version": "5.1.0", "why": "x"}}, "fixed_upstream: unknown key"),
        ({"evidence": {"scenario": "s", "observed": ""}}, "evidence values"),
        ({"summary": "  "}, "summary must be"),
        ({"fix": "no_colon"}, "not 'module:function'"),
        ({"targets": []}, "targets"),
        ({"sweep": ["Left Padded"]}, "sweep"),
        ({"sweep": "left-padded"}, "sweep"),
    ],
)
def test_invalid_manifests_are_rejected(change, message):
    data = dict(GOOD)
    for key, value in change.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    with pytest.raises(ManifestError, match=message):
        parse(data)


def test_fixed_upstream_takes_one_release_or_a_list_with_its_reason():
    one = parse({**GOOD, "fixed_upstream": {"version": "5.1.0", "ref": "#1"}})
    assert one.fixed_versions == ("5.1.0",)
    two = parse({**GOOD, "fixed_upstream": {"version": ["4.57.0", "5.1.0"], "reason": "two causes"}})
    assert two.fixed_versions == ("4.57.0", "5.1.0")
    assert parse(GOOD).fixed_versions == ()
    rollback = next(m for m in MANIFESTS if m.id == "sliding-window-rollback-cache")
    assert rollback.fixed_versions == ("4.57.0", "5.1.0") and rollback.fixed_upstream["reason"]


def test_file_name_must_match_id(tmp_path):
    path = tmp_path / "other.toml"
    path.write_text('id = "x-y"\nsummary = "s"\nfamily = "padding"\ntargets = ["m:A.b"]\naffected = ">=1"\n'
                    'fix = "m:f"\nprobe = "m:p"\n[evidence]\nscenario = "s"\nobserved = "o"\n')
    with pytest.raises(ManifestError, match="file name"):
        load_file(path)


def test_wheel_ships_the_manifests(tmp_path):
    build = pytest.importorskip("build", reason="the 'build' package is needed to build the wheel")
    del build
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path),
                           str(ROOT)], capture_output=True, text=True)
    if proc.returncode != 0 and "hatchling" in proc.stderr:
        pytest.skip("hatchling is not installed in this environment")
    assert proc.returncode == 0, proc.stderr[-2000:]
    wheel = next(tmp_path.glob("*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for m in MANIFESTS:
        here = f"hf_genfix/_patches/{folder(m.family)}/{m.id.replace('-', '_')}"
        assert {f"{here}/manifest.toml", f"{here}/fix.py", f"{here}/probe.py"} <= names, here
    assert "hf_genfix/_patches/__init__.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert "hf_genfix/_patches/verified.json" in names  # the verified range an installed package reports
    assert "hf_genfix/_patches/judged-torch.json" in names  # the torch of each judgement (catalog.torch_not_judged)
    # the oracles' tiny remote-code repos are package data, copied into a temporary repo when a probe runs
    repos = ROOT / "src" / "hf_genfix" / "oracles" / "remote_repos"
    shipped = sorted(str(p.relative_to(ROOT / "src")) for p in repos.rglob("*") if p.suffix in (".py", ".json"))
    assert shipped and all(name in names for name in shipped)
    assert "hf_genfix/py.typed" in names


def test_writing_a_patch_lists_the_families_as_the_code_does():
    rows = {line.replace("`", "") for line in (ROOT / "docs" / "writing-a-patch.md").read_text().splitlines()}
    for family, covers in FAMILIES.items():
        assert f"| {family} | {folder(family)} | {covers} |" in rows, family
