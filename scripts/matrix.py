#!/usr/bin/env python3
"""The transformers version matrix: the release list, the compat report, the upgrade check, the CI workflow.

The list of releases lives in one place, the ``env_list`` of tox.ini (``tf-{4.46.3,...}``); everything here
reads it from there.

    python scripts/matrix.py releases                  # the releases, one a line
    python scripts/matrix.py install tf-5.12.0         # pip install transformers==5.12.0 into this python
    python scripts/matrix.py doctor tf-5.12.0          # hf-genfix doctor -> tox-results/tf-5.12.0.json
    python scripts/matrix.py report                    # tox-results/*.json -> docs/compat-matrix.{md,json}; exit 1 on
                                                       # a range that disagrees with what was observed
    python scripts/matrix.py upgrade-check 5.25.0      # install it, run doctor --sweep, diff vs the newest release
    python scripts/matrix.py workflow [--check]        # (re)write .github/workflows/matrix.yml from the list
    python scripts/matrix.py ci-envs                   # the oldest, middle and newest envs, for .ci/run

It uses the standard library only (plus hf_genfix's manifest loader for ``report``), so ``tox -e report`` needs
neither torch nor transformers.
"""

from __future__ import annotations

import argparse
import configparser
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

ROOT = Path(__file__).resolve().parents[1]
TOX_INI = ROOT / "tox.ini"
RESULTS = ROOT / "tox-results"
MATRIX_MD = ROOT / "docs" / "compat-matrix.md"
MATRIX_JSON = ROOT / "docs" / "compat-matrix.json"
WORKFLOW = ROOT / ".github" / "workflows" / "matrix.yml"
ENV_PREFIX = "tf-"
_VERSION = re.compile(r"^\d+(\.\d+)*([a-z]+\d*)?(\.dev\d+|\.post\d+)?$")


# -- the release list -------------------------------------------------------------------------------------------
def expand(item: str) -> list[str]:
    """tox's generative names: ``tf-{1.0,2.0}`` -> ``tf-1.0``, ``tf-2.0`` (one brace group is all we use)."""
    match = re.search(r"\{([^{}]*)\}", item)
    if not match:
        return [item]
    head, tail = item[: match.start()], item[match.end():]
    return [out for part in match.group(1).split(",") for out in expand(head + part.strip() + tail)]


def env_names(tox_ini: Path = TOX_INI) -> list[str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(tox_ini, encoding="utf-8")
    raw = parser.get("tox", "env_list", fallback="")
    items = [i.strip() for line in raw.splitlines() for i in _split_top(line) if i.strip()]
    return [name for item in items for name in expand(item)]


def _split_top(line: str) -> list[str]:
    """Split on commas outside braces."""
    parts, depth, current = [], 0, ""
    for ch in line:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return parts + [current]


def releases(tox_ini: Path = TOX_INI) -> list[str]:
    """The transformers releases of the matrix, in tox.ini's order (oldest first)."""
    return [name[len(ENV_PREFIX):] for name in env_names(tox_ini) if name.startswith(ENV_PREFIX)]


def ci_envs(tox_ini: Path = TOX_INI) -> list[str]:
    """The oldest, the middle and the newest release of the matrix: what a quick CI run covers."""
    ordered = sorted(releases(tox_ini), key=release_key)
    picks = [ordered[0], ordered[len(ordered) // 2], ordered[-1]]
    return [ENV_PREFIX + v for v in dict.fromkeys(picks)]


def release_key(version: str) -> tuple:
    from packaging.version import Version

    return (Version(version),)


def requirement(spec: str) -> str:
    """``tf-5.12.0`` or ``5.12.0`` -> ``transformers==5.12.0``; anything else (a path, a URL) is passed as is."""
    spec = spec[len(ENV_PREFIX):] if spec.startswith(ENV_PREFIX) else spec
    return f"transformers=={spec}" if _VERSION.match(spec) else spec


def install(spec: str, torch_dir: Path | None = None, torch_spec: str | None = None) -> int:
    """Into this python: the shared torch (see ``shared_torch``), then transformers for ``spec``."""
    if torch_dir is not None:
        code = shared_torch(Path(torch_dir), torch_spec if torch_spec is not None else TORCH_DEFAULT)
        if code:
            return code
    req = requirement(spec)
    print(f"matrix: pip install {req}", flush=True)
    return subprocess.call([sys.executable, "-m", "pip", "install", "--quiet", req])


TORCH_DEFAULT = "torch==2.13.0"


def shared_torch(root: Path, torch_spec: str) -> int:
    """One torch for every env: installed once with ``pip install --target`` and linked in by a .pth file.

    A CPU torch is ~900 MB installed and a minute to unpack; thirteen copies would cost a quarter of an hour and
    12 GB. ``torch_spec`` is any pip requirement (GENFIX_TORCH); empty means "do not install torch here" (use
    one the env already has). Parallel envs (``tox p``) wait on a lock while the first one installs.
    """
    import sysconfig

    if not torch_spec.strip():
        return 0
    slug = re.sub(r"[^A-Za-z0-9.]+", "_", torch_spec.strip())
    target = root / slug
    done = target / ".genfix-complete"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{slug}.lock", "w") as lock:
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - no flock on Windows: run the envs one at a time there
            pass
        if not done.exists():
            print(f"matrix: pip install --target {target} {torch_spec} (once for all envs)", flush=True)
            code = subprocess.call([sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target),
                                    torch_spec])
            if code:
                return code
            done.write_text(torch_spec + "\n")
    pth = Path(sysconfig.get_paths()["purelib"]) / "genfix_shared_torch.pth"
    pth.write_text(str(target) + "\n")
    return 0


# -- reading doctor reports -------------------------------------------------------------------------------------
def load_results(directory: Path) -> dict[str, dict[str, Any]]:
    """``tox-results/tf-X.json`` (doctor reports) keyed by the transformers version each one ran on."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(Path(directory).glob(f"{ENV_PREFIX}*.json")):
        report = json.loads(path.read_text(encoding="utf-8"))
        out[report.get("transformers") or path.stem[len(ENV_PREFIX):]] = report
    return out


def digest(report: Mapping[str, Any]) -> dict[str, Any]:
    """What a doctor report says per patch, without timings: the part the matrix records and compares."""
    patches = {}
    for p in report.get("patches", []):
        patches[p["id"]] = {
            "state": p["state"],
            "affected": p["affected"],
            "without": (p.get("without") or {}).get("outcome"),
            "with": (p.get("with") or {}).get("outcome"),
            "verdict": p["verdict"],
            "message": p.get("message", ""),
            "targets": {t["target"]: (t["signature"] if t["exists"] else None) for t in p.get("targets", [])},
        }
    out: dict[str, Any] = {"transformers": report.get("transformers"), "torch": report.get("torch"),
                           "patches": patches}
    if report.get("sweep") is not None:
        sweep = report["sweep"]
        out["sweep_unknown"] = sorted([_defect_key(d) for d in sweep.get("unknown", [])]
                                      + [f"{arch} / every scenario" for arch in sweep.get("unusable", {})])
    return out


def _defect_key(defect: Mapping[str, Any]) -> str:
    return f"{defect['arch']} / {defect['scenario']}"


# -- the report -------------------------------------------------------------------------------------------------
def in_range(specifier: str, version: str) -> bool:
    from hf_genfix._registry import in_range as gate

    return gate(specifier, version)


def check(manifests: Sequence[Any], rows: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Every way in which what was observed disagrees with the manifests (empty when the catalog is right)."""
    problems: list[str] = []
    for m in manifests:
        for version, row in rows.items():
            seen = row["patches"].get(m.id)
            where = f"{m.id} on transformers {version}"
            if seen is None:
                problems.append(f"{where}: no result (the run predates the manifest: rerun tox -e tf-{version})")
                continue
            inside = in_range(m.affected, version)
            if seen["without"] == "error" or seen["with"] == "error":
                problems.append(f"{where}: the probe errored: {seen['message']}")
            elif seen["with"] == "defect":
                problems.append(f"{where}: the patch is installed but its probe still fails: {seen['message']}")
            elif seen["without"] == "defect" and not inside:
                problems.append(f"{where}: defect observed, but affected {m.affected!r} excludes this release")
            elif seen["without"] == "pass" and inside:
                problems.append(f"{where}: affected {m.affected!r} includes this release, but the probe sees no "
                                f"defect without the patch")
            elif seen["state"] in ("drift", "failed") and inside:
                problems.append(f"{where}: the patch is needed but could not be installed ({seen['state']})")
            if seen["affected"] != m.affected:
                problems.append(f"{where}: the run used affected {seen['affected']!r}, the manifest now says "
                                f"{m.affected!r}: rerun tox -e tf-{version}")
    return problems


def cell(seen: Mapping[str, Any] | None, inside: bool) -> str:
    if seen is None:
        return "no result"
    without, with_patch = seen["without"], seen["with"]
    if "error" in (without, with_patch):
        return "**probe error**"
    if without == "skipped" or with_patch == "skipped":
        return "n/a"
    if with_patch == "defect":
        return "**defect / NOT fixed**"
    if without == "defect":
        if not inside:
            return "**defect / catalog wrong**"
        return "defect / fixed" if with_patch == "pass" else f"**defect / {seen['state']}**"
    if inside:
        return "**no defect / range wrong**"
    return "not needed"


def render_markdown(manifests: Sequence[Any], rows: Mapping[str, Mapping[str, Any]],
                    problems: Sequence[str]) -> str:
    versions = sorted(rows, key=release_key)
    lines = [
        "# Compatibility matrix",
        "",
        "<!-- Generated by `tox -e report` (scripts/matrix.py report) from the doctor results of every tox env "
        "and the manifests in patches/. Do not edit by hand. -->",
        "",
        "Each cell: what the patch's probe saw on that release without the patch / with it.",
        "`defect / fixed`: the defect reproduces without the patch and the patch fixes it. `not needed`: outside "
        "the manifest's `affected` range and the probe sees no defect. `n/a`: the scenario cannot run on that "
        "release (e.g. the architecture does not exist yet). Anything in bold disagrees with the manifest.",
        "",
        "| patch | affected | " + " | ".join(versions) + " |",
        "|---|---|" + "---|" * len(versions),
    ]
    for m in manifests:
        cells = [cell(rows[v]["patches"].get(m.id), in_range(m.affected, v)) for v in versions]
        lines.append(f"| `{m.id}` | `{m.affected}` | " + " | ".join(cells) + " |")
    lines += ["", "| release | torch |", "|---|---|"]
    lines += [f"| {v} | {rows[v].get('torch')} |" for v in versions]
    swept = [v for v in versions if "sweep_unknown" in rows[v]]
    for v in swept:
        found = rows[v]["sweep_unknown"]
        lines += ["", f"`hf-genfix doctor --sweep` on {v}: {len(found)} unknown defect(s)"
                  + (": " + ", ".join(f"`{k}`" for k in found) if found else "") + "."]
    lines += ["", f"Disagreements: {len(problems)}."]
    lines += [f"- {p}" for p in problems]
    return "\n".join(lines) + "\n"


def report(results: Path = RESULTS, md: Path = MATRIX_MD, data: Path = MATRIX_JSON,
           expected: Iterable[str] | None = None, patches_dir: Path | None = None) -> int:
    from hf_genfix._manifest import load_dir

    manifests = load_dir(patches_dir or ROOT / "patches")
    rows = {v: digest(r) for v, r in load_results(results).items()}
    problems = []
    expected = list(expected) if expected is not None else releases()
    missing = [v for v in expected if v not in rows]
    problems += [f"transformers {v}: no doctor result in {results} (run tox -e {ENV_PREFIX}{v})" for v in missing]
    problems += check(manifests, rows)
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text(render_markdown(manifests, rows, problems), encoding="utf-8")
    data.write_text(json.dumps({
        "generated_by": "scripts/matrix.py report",
        "releases": sorted(rows, key=release_key),
        "manifests": {m.id: m.affected for m in manifests},
        "results": {v: rows[v] for v in sorted(rows, key=release_key)},
    }, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    print(f"matrix: {len(rows)} releases x {len(manifests)} patches -> {md.relative_to(ROOT) if md.is_relative_to(ROOT) else md}")
    for p in problems:
        print(f"DISAGREES: {p}")
    print(f"matrix: {'FAILED' if problems else 'OK'}: {len(problems)} disagreement(s)")
    return 1 if problems else 0


# -- one env's doctor run -------------------------------------------------------------------------------------
def doctor(env_name: str, results: Path = RESULTS, tox_ini: Path = TOX_INI) -> int:
    """``hf-genfix doctor`` for a matrix env, its JSON saved as tox-results/<env>.json.

    The newest release also runs the sweep, so that the matrix records which unknown defects it already has and
    the upgrade check reports only the new ones. The exit status is the catalog's (the sweep informs).
    """
    out = Path(results) / f"{env_name}.json"
    newest = ENV_PREFIX + max(releases(tox_ini), key=release_key)
    cmd = [sys.executable, "-m", "hf_genfix", "doctor", "--output", str(out)]
    code = subprocess.call(cmd + (["--sweep"] if env_name == newest else []))
    if not out.exists():
        return code or 1
    return 0 if json.loads(out.read_text(encoding="utf-8"))["ok"] else 1


# -- the upgrade check ------------------------------------------------------------------------------------------
def changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between two digests (an older release's and a candidate's), one line per change."""
    out: list[str] = []
    ov, nv = old.get("transformers"), new.get("transformers")
    installed = ("applied", "forced")
    for pid in sorted(set(old["patches"]) | set(new["patches"])):
        o, n = old["patches"].get(pid), new["patches"].get(pid)
        if o is None or n is None:
            out.append(f"{pid}: {'new in the catalog' if o is None else 'gone from the catalog'}")
            continue
        if (o["state"] in installed) != (n["state"] in installed):
            verb = "starts applying" if n["state"] in installed else "stops applying"
            out.append(f"{pid}: {verb} ({o['state']} on {ov} -> {n['state']} on {nv})")
        elif o["state"] != n["state"]:
            out.append(f"{pid}: state {o['state']} on {ov} -> {n['state']} on {nv}")
        if o["without"] != "defect" and n["without"] == "defect":
            label = "new defect" if n["state"] not in installed else "defect now present (the patch applies)"
            out.append(f"{pid}: {label} on {nv}: the probe fails without the patch ({n['message']})")
        if o["without"] == "defect" and n["without"] == "pass":
            out.append(f"{pid}: the defect no longer reproduces on {nv} (fixed upstream?)")
        if o["with"] != "defect" and n["with"] == "defect":
            out.append(f"{pid}: REGRESSION: the patch no longer fixes the defect on {nv} ({n['message']})")
        if "error" in (n["without"], n["with"]) and "error" not in (o["without"], o["with"]):
            out.append(f"{pid}: the probe now errors: {n['message']}")
        for target in sorted(set(o["targets"]) | set(n["targets"])):
            before, after = o["targets"].get(target, "?"), n["targets"].get(target, "?")
            if before == after:
                continue
            if after is None:
                out.append(f"{pid}: target drifted: {target} is gone on {nv}")
            elif before is None:
                out.append(f"{pid}: target {target} exists again on {nv}")
            elif "?" not in (before, after):
                out.append(f"{pid}: target drifted: {target} parameters {_param_diff(before, after)}")
        if n["verdict"] in ("catalog-wrong", "not-fixed", "unprotected", "probe-error"):
            out.append(f"{pid}: doctor verdict on {nv}: {n['verdict']}: {n['message']}")
    known = set(old.get("sweep_unknown", []))
    for key in new.get("sweep_unknown", []):
        if key not in known:
            out.append(f"sweep: unknown defect on {nv}: {key}")
    return out


def _param_diff(before: str, after: str) -> str:
    """``(a, b, c)`` vs ``(a, c, d)`` -> ``-b +d`` (or the two strings when only the order changed)."""
    split = lambda sig: [p.strip() for p in sig.strip("()").split(",") if p.strip()]  # noqa: E731
    old, new = split(before), split(after)
    gone = [f"-{p}" for p in old if p not in new]
    added = [f"+{p}" for p in new if p not in old]
    return " ".join(gone + added) or f"reordered {before} -> {after}"


def baseline(results: Path = RESULTS, data: Path = MATRIX_JSON, tox_ini: Path = TOX_INI) -> dict[str, Any]:
    """The newest release of the matrix: its fresh result if tox-results/ has one, else the committed matrix."""
    newest = max(releases(tox_ini), key=release_key)
    fresh = Path(results) / f"{ENV_PREFIX}{newest}.json"
    if fresh.exists():
        return digest(json.loads(fresh.read_text(encoding="utf-8")))
    recorded = json.loads(Path(data).read_text(encoding="utf-8"))
    if newest not in recorded["results"]:
        raise SystemExit(f"matrix: no result for the newest release {newest}: run tox -e {ENV_PREFIX}{newest}")
    return recorded["results"][newest]


def upgrade_check(spec: str, results: Path = RESULTS, sweep: bool = True, torch_dir: Path | None = None) -> int:
    if install(spec, torch_dir, os.environ.get("GENFIX_TORCH")) != 0:
        print(f"matrix: could not install {requirement(spec)} (is it released on your package index?)")
        return 2
    out = Path(results) / f"upgrade-{re.sub(r'[^A-Za-z0-9.]+', '_', spec)}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "hf_genfix", "doctor", "--output", str(out)] + (["--sweep"] if sweep else [])
    subprocess.call(cmd)
    if not out.exists():
        print("matrix: doctor wrote no report")
        return 2
    new = digest(json.loads(out.read_text(encoding="utf-8")))
    old = baseline(results)
    found = changes(old, new)
    print(f"\nupgrade check: transformers {old['transformers']} (newest in the matrix) -> {new['transformers']}")
    for line in found or ["no changes"]:
        print(f"  {line}")
    if "sweep_unknown" not in old:
        print(f"  (no sweep recorded for {old['transformers']}: every unknown defect above is listed as new)")
    catalog_ok = json.loads(out.read_text(encoding="utf-8"))["ok"]
    alarming = ("REGRESSION", "new defect", "unknown defect", "now errors", "doctor verdict")
    return 0 if catalog_ok and not any(word in f for f in found for word in alarming) else 1


# -- the CI workflow --------------------------------------------------------------------------------------------
def workflow_text(versions: Sequence[str]) -> str:
    matrix = ", ".join(f'"{v}"' for v in versions)
    return f"""\
# Generated by `python scripts/matrix.py workflow` from the env_list in tox.ini. Do not edit by hand:
# change tox.ini and regenerate (tests/tooling/test_matrix.py fails when this file is stale).
name: matrix
on:
  push:
  pull_request:
  workflow_dispatch:
jobs:
  release:
    name: transformers ${{{{ matrix.release }}}}
    runs-on: ubuntu-latest
    strategy:
      fail-fast: false
      matrix:
        release: [{matrix}]
    env:
      # A CPU build of torch: PyTorch's CPU wheel index keeps pip from fetching a CUDA build.
      GENFIX_TORCH: "torch==2.13.0"
      PIP_EXTRA_INDEX_URL: "https://download.pytorch.org/whl/cpu"
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - run: python -m pip install "tox>=4.20"
      - run: tox -e {ENV_PREFIX}${{{{ matrix.release }}}}
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: doctor-${{{{ matrix.release }}}}
          path: tox-results/{ENV_PREFIX}${{{{ matrix.release }}}}.json
  report:
    needs: release
    if: always()
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - uses: actions/download-artifact@v4
        with:
          path: tox-results
          merge-multiple: true
      - run: python -m pip install "tox>=4.20"
      - run: tox -e report
      - run: git diff --exit-code docs/compat-matrix.md
"""


def workflow(check_only: bool = False, path: Path = WORKFLOW) -> int:
    text = workflow_text(releases())
    current = path.read_text(encoding="utf-8") if path.exists() else None
    if check_only:
        if current != text:
            print(f"matrix: {path} is stale: run python scripts/matrix.py workflow")
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"matrix: wrote {path} ({len(releases())} releases)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/matrix.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("releases")
    sub.add_parser("ci-envs")
    p = sub.add_parser("install")
    p.add_argument("spec", help="tf-X, X, or any pip requirement for transformers")
    p.add_argument("--torch-dir", type=Path, help="where the torch shared by every env is installed")
    p = sub.add_parser("doctor")
    p.add_argument("env_name")
    p = sub.add_parser("report")
    p.add_argument("--results", type=Path, default=RESULTS)
    p = sub.add_parser("upgrade-check")
    p.add_argument("spec", help="the transformers release to check, e.g. 5.25.0")
    p.add_argument("--torch-dir", type=Path, help="where the torch shared by every env is installed")
    p.add_argument("--no-sweep", action="store_true")
    p.add_argument("--results", type=Path, default=RESULTS)
    p = sub.add_parser("workflow")
    p.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "releases":
        print("\n".join(releases()))
        return 0
    if args.command == "ci-envs":
        print(",".join(ci_envs()))
        return 0
    if args.command == "install":
        return install(args.spec, args.torch_dir, os.environ.get("GENFIX_TORCH"))
    if args.command == "doctor":
        return doctor(args.env_name)
    if args.command == "report":
        return report(args.results)
    if args.command == "upgrade-check":
        return upgrade_check(args.spec, args.results, sweep=not args.no_sweep, torch_dir=args.torch_dir)
    return workflow(args.check)


if __name__ == "__main__":
    raise SystemExit(main())
