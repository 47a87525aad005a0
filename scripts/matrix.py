#!/usr/bin/env python3
"""The transformers version matrix: the release list, the compat report, release-to-release diffs, the CI workflow.

The list of releases is derived from the manifests: for every boundary of every ``affected`` range, the last
release before it and the first release at or after it (found by walking the published releases in
scripts/transformers-releases.txt and keeping each adjacent pair where the range's verdict flips, so ``!=X.*``
exclusions and patch-release boundaries count), plus the oldest supported and the newest release. ``sync``
writes it into tox.ini's ``env_list``, the CI workflow, the verified range hf_genfix ships
(``patches/verified.json``) and docs/matrix.md's figures; tests/tooling/test_matrix.py fails when they drift.

    python scripts/matrix.py releases                  # the derived releases, one a line (--why: the boundaries)
    python scripts/matrix.py sync [--check]            # write the derived list into tox.ini and the CI workflow
    python scripts/matrix.py refresh                   # re-read the published releases from the package index
    python scripts/matrix.py run tf-5.12.0             # one env: doctor; on the suite releases with --sweep
                                                       # --differential, and the test suite
    python scripts/matrix.py all [-p 2]                # tox p over every env, then the report; prints the total time
    python scripts/matrix.py install tf-5.12.0         # pip install transformers==5.12.0 into this python
                                                       # (`newest`: the newest release of the matrix)
    python scripts/matrix.py doctor tf-5.12.0          # hf-genfix doctor -> tox-results/tf-5.12.0.json
    python scripts/matrix.py report                    # tox-results/*.json -> docs/compat-matrix.{md,json}; exit 1 on
                                                       # a range that disagrees with what was observed
    python scripts/matrix.py workflow [--check]        # (re)write .github/workflows/matrix.yml from the list
    python scripts/matrix.py ci-envs                   # the oldest, middle and newest suite envs, for .ci/run

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
# The verified range, shipped with the manifests (hf_genfix.catalog reads it in an installed package).
VERIFIED = ROOT / "patches" / "verified.json"
# Every torch each release was judged with, shipped too (hf_genfix.catalog.torch_not_judged): written by ``report``.
JUDGED = ROOT / "patches" / "judged-torch.json"
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


PUBLISHED = ROOT / "scripts" / "transformers-releases.txt"


def published(path: Path = PUBLISHED) -> list[str]:
    """The final transformers releases on the package index, oldest first (a snapshot: ``matrix.py refresh``)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return sorted((ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")), key=release_key)


def matrix_settings(tox_ini: Path = TOX_INI) -> dict[str, Any]:
    """tox.ini's ``[matrix]`` section: the oldest supported release and the releases that run the test suite."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(tox_ini, encoding="utf-8")
    return {"oldest_supported": parser.get("matrix", "oldest_supported", fallback="4.40.2").strip(),
            "suite": parser.get("matrix", "suite", fallback="").split()}


def boundary_pairs(specifier: str, versions: Sequence[str]) -> list[tuple[str, str]]:
    """Adjacent releases on which ``specifier`` decides differently: the two sides of each of its boundaries."""
    inside = [in_range(specifier, v) for v in versions]
    return [(versions[i], versions[i + 1]) for i in range(len(versions) - 1) if inside[i] != inside[i + 1]]


def boundaries(manifests: Sequence[Any], versions: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    return {m.id: boundary_pairs(m.affected, versions) for m in manifests}


def derived_releases(manifests: Sequence[Any], versions: Sequence[str], oldest: str) -> list[str]:
    """Both sides of every boundary of every manifest, the oldest supported and the newest release."""
    from packaging.version import Version

    supported = [v for v in versions if Version(v) >= Version(oldest)]
    picks = {supported[0], supported[-1]}
    for pairs in boundaries(manifests, supported).values():
        picks.update(v for pair in pairs for v in pair)
    return sorted(picks, key=release_key)


def _manifests(patches_dir: Path | None = None) -> list[Any]:
    from hf_genfix._manifest import load_dir

    return load_dir(patches_dir or ROOT / "patches")


def wanted_releases(tox_ini: Path = TOX_INI, patches_dir: Path | None = None,
                    published_file: Path = PUBLISHED) -> list[str]:
    return derived_releases(_manifests(patches_dir), published(published_file),
                            matrix_settings(tox_ini)["oldest_supported"])


def suite_releases(tox_ini: Path = TOX_INI) -> list[str]:
    """The releases that run the whole test suite: the oldest and newest of the list and [matrix] suite."""
    listed = sorted(releases(tox_ini), key=release_key)
    picks = [listed[0], *matrix_settings(tox_ini)["suite"], listed[-1]]
    return sorted(dict.fromkeys(v for v in picks if v in listed), key=release_key)


def ci_envs(tox_ini: Path = TOX_INI) -> list[str]:
    """The oldest, a middle and the newest suite release: what a quick CI run covers."""
    ordered = suite_releases(tox_ini)
    # The lower middle when the count is even: the newest release joins the suite on the day it is published, and
    # the middle should not move with it (5.25.0 made 5.24.0, the previous newest, a suite release of its own).
    picks = [ordered[0], ordered[(len(ordered) - 1) // 2], ordered[-1]]
    return [ENV_PREFIX + v for v in dict.fromkeys(picks)]


def verified_text(versions: Sequence[str]) -> str:
    """patches/verified.json: the oldest and newest release of the matrix, the range hf_genfix calls verified."""
    ordered = sorted(versions, key=release_key)
    return json.dumps({"generated_by": "python scripts/matrix.py sync (from tox.ini)", "oldest": ordered[0],
                       "newest": ordered[-1], "releases": len(ordered)}, indent=2) + "\n"


MATRIX_DOC = ROOT / "docs" / "matrix.md"
DOC_START = "<!-- matrix-releases:start (generated by scripts/matrix.py sync) -->"
DOC_END = "<!-- matrix-releases:end -->"


def matrix_doc_text(text: str, versions: Sequence[str]) -> str:
    """docs/matrix.md with its figures about the release list (count, first and last env) from ``versions``."""
    ordered = sorted(versions, key=release_key)
    block = (f"`tox.ini` has one env per release: {len(ordered)} releases, `{ENV_PREFIX}{ordered[0]}` ... "
             f"`{ENV_PREFIX}{ordered[-1]}`, the range `hf-genfix list` and\n`hf-genfix doctor` call verified "
             f"(`patches/verified.json`).")
    head, _, rest = text.partition(DOC_START)
    _, _, tail = rest.partition(DOC_END)
    return f"{head}{DOC_START}\n{block}\n{DOC_END}{tail}" if DOC_START in text else text


def sync(check_only: bool = False, tox_ini: Path = TOX_INI, workflow_path: Path | None = None,
         verified_path: Path = VERIFIED, matrix_doc: Path = MATRIX_DOC) -> int:
    """Write the derived release list into tox.ini's env_list and the verified range into patches/verified.json
    (and regenerate the workflow)."""
    wanted = wanted_releases(tox_ini)
    text = Path(tox_ini).read_text(encoding="utf-8")
    line = "    " + ENV_PREFIX + "{" + ",".join(wanted) + "}"
    updated = re.sub(r"(?m)^    " + re.escape(ENV_PREFIX) + r"\{[^}]*\}$", line, text, count=1)
    verified = verified_text(wanted)
    doc = Path(matrix_doc).read_text(encoding="utf-8") if Path(matrix_doc).is_file() else ""
    doc_wanted = matrix_doc_text(doc, wanted)
    if check_only:
        if updated != text:
            print(f"matrix: tox.ini's env_list is not the list the manifests need: run python scripts/matrix.py "
                  f"sync\n  now:    {releases(tox_ini)}\n  wanted: {wanted}")
            return 1
        if not Path(verified_path).is_file() or Path(verified_path).read_text(encoding="utf-8") != verified:
            print(f"matrix: {Path(verified_path).name} does not hold tox.ini's range: run python scripts/matrix.py "
                  f"sync")
            return 1
        if doc != doc_wanted:
            print(f"matrix: {Path(matrix_doc).name}'s release figures are not tox.ini's: run python scripts/matrix.py "
                  f"sync")
            return 1
        return workflow(check_only=True, path=workflow_path or WORKFLOW)
    Path(tox_ini).write_text(updated, encoding="utf-8")
    Path(verified_path).write_text(verified, encoding="utf-8")
    if doc:
        Path(matrix_doc).write_text(doc_wanted, encoding="utf-8")
    print(f"matrix: tox.ini lists {len(wanted)} releases; {Path(verified_path).name}: {wanted[0]} to {wanted[-1]}")
    return workflow(path=workflow_path or WORKFLOW)


def refresh(path: Path = PUBLISHED) -> int:
    """Re-read the published final releases (>= 4.40.0) with ``pip index versions transformers``."""
    from datetime import date

    from packaging.version import Version

    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "transformers"],
                         capture_output=True, text=True)
    match = re.search(r"Available versions:(.*)", out.stdout)
    if out.returncode or not match:
        print(f"matrix: pip index versions failed: {out.stderr.strip()[-500:]}")
        return 2
    found = [v.strip() for v in match.group(1).split(",")]
    keep = sorted((v for v in found if not Version(v).is_prerelease and Version(v) >= Version("4.40.0")),
                  key=release_key)
    Path(path).write_text("# transformers releases on PyPI (final releases >= 4.40.0), oldest first.\n"
                          f"# Refreshed by: python scripts/matrix.py refresh  ({date.today()})\n"
                          + "\n".join(keep) + "\n", encoding="utf-8")
    print(f"matrix: {len(keep)} releases, newest {keep[-1]} -> {path}")
    return 0


def release_key(version: str) -> tuple:
    from packaging.version import Version

    return (Version(version),)


# The torch axis: ``tf-4.46.3-torch2.5.1`` is transformers 4.46.3 judged with torch 2.5.1 (the torch of its time)
# instead of the default one (TORCH_DEFAULT, or GENFIX_TORCH).
_TORCH_SUFFIX = re.compile(r"^(?P<release>.+)-torch(?P<torch>\d+(\.\d+)*)$")


def split_env(spec: str) -> tuple[str, str | None]:
    """``tf-4.46.3-torch2.5.1`` -> (``4.46.3``, ``2.5.1``); ``tf-5.12.0`` or ``5.12.0`` -> (``5.12.0``, None)."""
    spec = spec[len(ENV_PREFIX):] if spec.startswith(ENV_PREFIX) else spec
    match = _TORCH_SUFFIX.match(spec)
    return (match["release"], match["torch"]) if match else (spec, None)


def eras(tox_ini: Path = TOX_INI) -> list[str]:
    """tox.ini's ``eras`` label (``tox -m eras``): the envs that judge a release with the torch of its time."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(tox_ini, encoding="utf-8")
    for line in parser.get("tox", "labels", fallback="").splitlines():
        name, _, envs = line.partition("=")
        if name.strip() == "eras":
            return [e.strip() for e in envs.split(",") if e.strip()]
    return []


def requirement(spec: str) -> str:
    """``tf-5.12.0``, ``5.12.0`` or ``tf-5.12.0-torch2.14.1`` -> ``transformers==5.12.0``; anything else (a path, a
    URL) is passed as is."""
    spec = split_env(spec)[0]
    return f"transformers=={spec}" if _VERSION.match(spec) else spec


def install(spec: str, torch_dir: Path | None = None, torch_spec: str | None = None) -> int:
    """Into this python: the shared torch (see ``shared_torch``), then transformers for ``spec``. An env that names
    its torch (``tf-4.46.3-torch2.5.1``) gets that torch, whatever GENFIX_TORCH says."""
    named = split_env(spec)[1]
    if named is not None:
        torch_spec = f"torch=={named}"
    if torch_dir is not None:
        code = shared_torch(Path(torch_dir), torch_spec if torch_spec is not None else TORCH_DEFAULT)
        if code:
            return code
    req = requirement(max(releases(), key=release_key) if spec == "newest" else spec)
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
    """``tox-results/tf-X.json`` (doctor reports) keyed by the transformers version each one ran on; a report of
    the torch axis (``tf-X-torchY.json``) by ``X-torchY``, its column (see ``column``)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(Path(directory).glob(f"{ENV_PREFIX}*.json")):
        report = json.loads(path.read_text(encoding="utf-8"))
        release, torch = split_env(path.stem)
        out[column(report.get("transformers") or release, torch)] = report
    return out


def column(release: str, torch: str | None = None) -> str:
    """A column of the matrix: the release judged with the default torch (``5.24.0``) or with a torch of the torch
    axis (``5.24.0-torch2.14.1``: tox.ini's env name without ``tf-``)."""
    return release if torch is None else f"{release}-torch{torch}"


def column_key(key: str) -> tuple:
    """Columns in release order, each release's default-torch column before its torch-axis ones."""
    release, torch = split_env(key)
    return (*release_key(release), torch is not None, tuple(int(p) for p in (torch or "0").split(".")))


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
            "message": _MACHINE_PATH.sub("", p.get("message", "")),
            "targets": {t["target"]: (t["signature"] if t["exists"] else None) for t in p.get("targets", [])},
        }
    out: dict[str, Any] = {"transformers": report.get("transformers"), "torch": report.get("torch"),
                           "patches": patches}
    if report.get("sweep") is not None:
        sweep = report["sweep"]
        out["sweep_unknown"] = sorted([_defect_key(d) for d in sweep.get("unknown", [])]
                                      + [f"{arch} / every scenario" for arch in sweep.get("unusable", {})])
        out["sweep_known"] = sorted(f"{_defect_key(d)} ({d.get('explained_by') or d.get('id', '?')})" for d in sweep.get("known", []))
        if sweep.get("quick"):  # --quick: a fixed sample of the architectures, not the matrix's whole sweep
            out["sweep_quick"] = True
    return out


# Where an env installed transformers ("/work/.tox/tf-5.0.0/lib/python3.11/site-packages/") is the machine's,
# not the release's: the committed matrix keeps the path from site-packages on.
_MACHINE_PATH = re.compile(r"/[^\s()'\"]*?/site-packages/")


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
        for key, row in rows.items():
            version, torch = split_env(key)
            seen = row["patches"].get(m.id)
            where = f"{m.id} on transformers {version}" + (f" with torch {row.get('torch')}" if torch else "")
            if seen is None:
                problems.append(f"{where}: no result (the run predates the manifest: rerun tox -e tf-{key})")
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
                                f"{m.affected!r}: rerun tox -e tf-{key}")
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
        if not inside and seen.get("verdict") == "open":
            return "defect / open (another defect, on file)"
        if not inside:
            return "**defect / catalog wrong**"
        return "defect / fixed" if with_patch == "pass" else f"**defect / {seen['state']}**"
    if inside:
        return "**no defect / range wrong**"
    return "not needed"


def _agrees(c: str) -> bool:
    return c in ("defect / fixed", "not needed", "n/a")


def render_markdown(manifests: Sequence[Any], rows: Mapping[str, Mapping[str, Any]],
                    problems: Sequence[str], versions_published: Sequence[str] | None = None) -> str:
    """A row per release (what each patch's probe saw there), then every boundary of every range and whether the
    run confirmed it (both sides measured and agreeing with the manifest)."""
    versions = sorted(rows, key=column_key)
    cells = {(m.id, v): cell(rows[v]["patches"].get(m.id), in_range(m.affected, split_env(v)[0]))
             for m in manifests for v in versions}
    pairs = boundaries(manifests, list(versions_published or [v for v in versions if split_env(v)[1] is None]))
    marks: dict[str, list[str]] = {v: [] for v in versions}
    boundary_lines = []
    for m in manifests:
        for before, after in pairs[m.id]:
            sides = [cells.get((m.id, v), "no result") for v in (before, after)]
            confirmed = all(_agrees(c) for c in sides)
            edge = "starts" if in_range(m.affected, after) else "ends"
            if after in marks:
                marks[after].append(f"`{m.id}` {edge} {'✓' if confirmed else '✗'}")
            boundary_lines.append(f"| `{m.id}` | `{m.affected}` | {before}: {sides[0]} | {after}: {sides[1]} | "
                                  f"{'confirmed' if confirmed else '**not confirmed**'} |")
    lines = [
        "# Compatibility matrix",
        "",
        "<!-- Generated by `tox -e report` (scripts/matrix.py report) from the doctor results of every tox env "
        "and the manifests in patches/. Do not edit by hand. -->",
        "",
        "One row per release: what every patch's probe saw there, without the patch / with it. `fixed`: the defect "
        "reproduces without the patch and the patch removes it (the patch applies on that release). `not needed`: "
        "outside the manifest's `affected` range and the probe sees no defect. `n/a`: the scenario cannot run on "
        "that release (e.g. the architecture does not exist yet). Anything in bold disagrees with the manifest. "
        "`boundaries`: the ranges that start or end at this release, ✓ when both sides were measured and agree. "
        "`torch`: the torch the release was judged with; a release judged with the torch of its time too (the "
        "torch axis, `X-torchY`) has a second row, compared with the first under *The torch axis*.",
        "",
        "| release | torch | fixed (applies here) | not needed | n/a | disagreements | boundaries |",
        "|---|---|---|---|---|---|---|",
    ]
    for v in versions:
        row = {m.id: cells[(m.id, v)] for m in manifests}
        fixed = [f"`{pid}`" for pid, c in row.items() if c == "defect / fixed"]
        skipped = [f"`{pid}`" for pid, c in row.items() if c == "n/a"]
        bad = [f"`{pid}`: {c}" for pid, c in row.items() if not _agrees(c)]
        lines.append(f"| {v} | {rows[v].get('torch')} | {', '.join(fixed) or '-'} | "
                     f"{sum(c == 'not needed' for c in row.values())} | {', '.join(skipped) or '-'} | "
                     f"{'; '.join(bad) or '-'} | {', '.join(marks[v]) or '-'} |")
    confirmed = sum("| confirmed |" in line for line in boundary_lines)
    lines += ["", f"## Boundaries: {confirmed} of {len(boundary_lines)} confirmed", "",
              "Each boundary of each `affected` range: the last release before it and the first at or after it "
              "(the releases `scripts/matrix.py releases` puts in the matrix), and what the probe saw on each.", "",
              "| patch | affected | last release before | first release at or after | verdict |",
              "|---|---|---|---|---|", *boundary_lines]
    known = {v: rows[v]["sweep_known"] for v in versions if rows[v].get("sweep_known")}
    swept = [v for v in versions if "sweep_unknown" in rows[v]]
    if swept or known:
        lines += ["", "## The sweep", ""]
    for v in swept:
        found = rows[v]["sweep_unknown"]
        quick = " --quick" if rows[v].get("sweep_quick") else ""
        lines += [f"- `hf-genfix doctor --sweep{quick}` on {v}: {len(found)} unknown defect(s)"
                  + (": " + ", ".join(f"`{k}`" for k in found) if found else "") + "."]
        if known.get(v):
            lines += [f"  Known (in the catalog, patched or not): " + ", ".join(f"`{k}`" for k in known[v]) + "."]
    lines += torch_axis_lines(manifests, rows, cells)
    from hf_genfix.catalog import FAMILIES

    lines += ["", "## Families", "", "| family | what it covers | patches |", "|---|---|---|"]
    lines += [f"| {family} | {covers} | " + (", ".join(f"`{m.id}`" for m in manifests if m.family == family) or "-")
              + " |" for family, covers in FAMILIES.items()]
    lines += ["", f"Disagreements: {len(problems)}."]
    lines += [f"- {p}" for p in problems]
    return "\n".join(lines) + "\n"


def torch_axis_lines(manifests: Sequence[Any], rows: Mapping[str, Mapping[str, Any]],
                     cells: Mapping[tuple[str, str], str]) -> list[str]:
    """Each torch-axis column against its release's default-torch column: the patches whose cell or doctor verdict
    differs, and the sweep's unknown defects seen with one torch only."""
    axis = [k for k in sorted(rows, key=column_key) if split_env(k)[1] is not None]
    if not axis:
        return []
    lines = ["", "## The torch axis", "",
             "A release judged with the torch of its time besides the default torch: what differs between the two "
             "columns (the patch's cell, and its doctor verdict in parentheses where that differs too), and the "
             "unknown defects of the sweep that only one of the two runs found. docs/matrix.md explains each "
             "difference.", "",
             "| release | torch | default torch | patches that differ | sweep: unknown only with this torch | "
             "sweep: unknown only with the default torch |", "|---|---|---|---|---|---|"]
    for key in axis:
        release = split_env(key)[0]
        row, ref = rows[key], rows.get(release)
        if ref is None:
            lines.append(f"| {release} | {row.get('torch')} | no result | - | - | - |")
            continue
        differ = []
        for m in manifests:
            a, b = ref["patches"].get(m.id) or {}, row["patches"].get(m.id) or {}
            if cells[(m.id, release)] != cells[(m.id, key)] or a.get("verdict") != b.get("verdict"):
                differ.append(f"`{m.id}`: {cells[(m.id, release)]} ({a.get('verdict')}) → {cells[(m.id, key)]} "
                              f"({b.get('verdict')})")
        if "sweep_unknown" in row and "sweep_unknown" in ref and row.get("sweep_quick") != ref.get("sweep_quick"):
            # a quick sweep (a sample) against a whole one: their unknown defects are no difference of torch
            sweep = [f"{'quick' if r.get('sweep_quick') else 'whole'} sweep: {len(r['sweep_unknown'])} unknown, not "
                     f"compared" for r in (row, ref)]
        elif "sweep_unknown" in row and "sweep_unknown" in ref:
            only_here = sorted(set(row["sweep_unknown"]) - set(ref["sweep_unknown"]))
            only_ref = sorted(set(ref["sweep_unknown"]) - set(row["sweep_unknown"]))
            sweep = [", ".join(f"`{k}`" for k in only_here) or "none", ", ".join(f"`{k}`" for k in only_ref) or "none"]
        else:
            sweep = [f"{len(row['sweep_unknown'])} unknown, not compared" if "sweep_unknown" in row
                     else "not swept with this torch",
                     f"{len(ref['sweep_unknown'])} unknown, not compared" if "sweep_unknown" in ref
                     else "not swept with the default torch"]
        lines.append(f"| {release} | {row.get('torch')} | {ref.get('torch')} | {'; '.join(differ) or 'none'} | "
                     f"{sweep[0]} | {sweep[1]} |")
    return lines


def committed_columns(data: Path = MATRIX_JSON) -> dict[str, dict[str, Any]]:
    """Every column of the committed compat-matrix.json (default torch and torch axis), {} when there is none."""
    try:
        recorded = json.loads(Path(data).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {**recorded.get("results", {}), **recorded.get("torch_axis", {})}


def judged_torch(rows: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """Per release, every torch it was judged with (the versions doctor reported: ``2.13.0+cpu``)."""
    out: dict[str, set[str]] = {}
    for key, row in rows.items():
        out.setdefault(split_env(key)[0], set()).add(str(row.get("torch")))
    return {v: sorted(out[v]) for v in sorted(out, key=release_key)}


def report(results: Path = RESULTS, md: Path = MATRIX_MD, data: Path = MATRIX_JSON,
           expected: Iterable[str] | None = None, patches_dir: Path | None = None,
           versions_published: Sequence[str] | None = None, keep_committed: bool = False,
           era_envs: Sequence[str] | None = None, judged: Path | None = None) -> int:
    """The report from ``results``. A torch-axis env of tox.ini (``[matrix] eras``) with no fresh result keeps its
    column from ``data`` (the committed matrix): those envs download several GB of torch each and run outside CI,
    whose report would otherwise drop them. ``keep_committed``: so does every release with no fresh result (a
    partial rerun); the default is to fail on it."""
    from hf_genfix._manifest import load_dir

    manifests = load_dir(patches_dir or ROOT / "patches")
    rows = {v: digest(r) for v, r in load_results(results).items()}
    committed = committed_columns(data)
    keep = [column(*split_env(e)) for e in (eras() if era_envs is None else era_envs)]
    keep += [k for k in committed if keep_committed and split_env(k)[1] is None]
    carried = [k for k in dict.fromkeys(keep) if k not in rows and k in committed]
    rows.update({k: committed[k] for k in carried})
    if carried:
        print(f"matrix: {len(carried)} column(s) kept from {Path(data).name} (no fresh result in {results}): "
              + ", ".join(carried))
    problems = []
    expected = list(expected) if expected is not None else releases()
    missing = [v for v in expected if v not in rows]
    problems += [f"transformers {v}: no doctor result in {results} (run tox -e {ENV_PREFIX}{v})" for v in missing]
    problems += check(manifests, rows)
    md.parent.mkdir(parents=True, exist_ok=True)
    if versions_published is None:
        from packaging.version import Version

        oldest = Version(matrix_settings()["oldest_supported"])
        versions_published = [v for v in published() if Version(v) >= oldest]
    md.write_text(render_markdown(manifests, rows, problems, versions_published), encoding="utf-8")
    ordered = sorted(rows, key=column_key)
    plain = [k for k in ordered if split_env(k)[1] is None]
    data.write_text(json.dumps({
        "generated_by": "scripts/matrix.py report",
        "releases": plain,
        "manifests": {m.id: m.affected for m in manifests},
        "results": {v: rows[v] for v in plain},
        # The torch axis: tox.ini's tf-X-torchY envs, keyed X-torchY; and every torch each release was judged
        # with, which the upgrade check compares with the user's.
        "torch_axis": {k: rows[k] for k in ordered if k not in plain},
        "judged_torch": judged_torch(rows),
    }, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    if judged is None and Path(data).resolve() == MATRIX_JSON.resolve():
        judged = JUDGED  # the committed matrix ships its torch versions; a report written elsewhere leaves them be
    if judged is not None:
        Path(judged).write_text(json.dumps({"generated_by": "scripts/matrix.py report",
                                            "releases": judged_torch(rows)}, indent=2) + "\n", encoding="utf-8")
    print(f"matrix: {len(rows)} columns x {len(manifests)} patches -> {md.relative_to(ROOT) if md.is_relative_to(ROOT) else md}")
    for p in problems:
        print(f"DISAGREES: {p}")
    print(f"matrix: {'FAILED' if problems else 'OK'}: {len(problems)} disagreement(s)")
    return 1 if problems else 0


# -- one env's doctor run -------------------------------------------------------------------------------------
def doctor(env_name: str, results: Path = RESULTS, tox_ini: Path = TOX_INI) -> int:
    """``hf-genfix doctor`` for a matrix env, its JSON saved as tox-results/<env>.json.

    Every suite release (``suite_releases``: the oldest, [matrix] suite and the newest) adds ``--sweep
    --differential``: every decoder-only architecture through every scenario, with and without hf_genfix. Its
    results go into the same report (``sweep``), so that the matrix records them and the upgrade check reports only
    new unknown defects against the newest. Exit status 1 when a patch fails (the catalog) and, on a suite release,
    when the sweep fails: an unknown defect, a scenario hf_genfix makes worse than upstream, or a catalog range the
    sweep shows wrong (what ``hf-genfix doctor --sweep`` exits 1 for).
    """
    out = Path(results) / f"{env_name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)  # doctor creates no folders (a typo in --output is an error)
    swept = split_env(env_name)[0] in suite_releases(tox_ini)
    cmd = [sys.executable, "-m", "hf_genfix", "doctor", "--output", str(out)]
    code = subprocess.call(cmd + (SWEEP_ARGS if swept else []))
    if not out.exists():
        return code or 1
    report = json.loads(out.read_text(encoding="utf-8"))
    if not report["ok"]:
        return 1
    if swept:
        failing = sweep_failures(report.get("sweep"))
        if failing or code:
            print(f"matrix: {env_name}: hf-genfix doctor {' '.join(SWEEP_ARGS)} FAILED (exit {code}): "
                  + ("; ".join(failing) or "no sweep in the report"))
            return 1
    return 0


# What a suite release's doctor adds (docs/matrix.md: the sweep).
SWEEP_ARGS = ["--sweep", "--differential"]


def sweep_failures(sweep: Mapping[str, Any] | None) -> list[str]:
    """One line per finding that makes ``doctor --sweep`` exit 1 (hf_genfix.oracles.sweep.failed): unknown defects
    and worse-than-upstream scenarios (the ``unknown`` list), catalog ranges the sweep shows wrong."""
    if sweep is None:
        return ["the report has no sweep"]
    lines = [f"{f.get('verdict', 'unknown')}: {_defect_key(f)}" for f in sweep.get("unknown", [])]
    lines += [f"catalog wrong: {_defect_key(f)}" for f in sweep.get("known", []) if f.get("catalog_wrong")]
    return lines


def run(env_name: str, pytest_args: Sequence[str] = (), tox_ini: Path = TOX_INI) -> int:
    """One tox env: ``doctor`` (every probe, both sides of each patch) on every release; ``doctor --sweep
    --differential`` and the test suite only on the suite releases (``GENFIX_SUITE=all`` runs the tests
    everywhere, ``GENFIX_SUITE_TESTS=0`` nowhere), which keeps the whole matrix within its budget."""
    import time

    start = time.monotonic()
    code = doctor(env_name, tox_ini=tox_ini)
    release = split_env(env_name)[0]
    tests = os.environ.get("GENFIX_SUITE_TESTS") != "0"
    if not tests:
        # .ci/run: the sweep only. The test suite on three releases (slow set included: 31 min for 5.24.0 alone on
        # 2 busy cores) took CI to 87 minutes; CI runs the README's tests once and the cross-release suite is tox's.
        print(f"matrix: {env_name}: GENFIX_SUITE_TESTS=0, the test suite is not run here")
    elif os.environ.get("GENFIX_SUITE") == "all" or release in suite_releases(tox_ini):
        # The slow tests too; the engine tests (tests/workers: launch mechanics, minutes) run once, in .ci/run.
        code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", "not workers", *pytest_args]) or code
    else:
        print(f"matrix: {env_name}: doctor only (the test suite runs on {', '.join(suite_releases(tox_ini))})")
    suite = release in suite_releases(tox_ini)
    print(f"matrix: {env_name} took {time.monotonic() - start:.0f} s "
          f"(doctor{' --sweep --differential' if suite else ''}{' + tests' if suite and tests else ''})")
    return code


def run_all(parallel: int = 2, tox_ini: Path = TOX_INI) -> int:
    """Every env with ``tox p`` (cold or warm), then the report; prints the total wall time."""
    import time

    start = time.monotonic()
    # Longest first (the suite releases add the sweep and the tests, the newest the longest sweep): in release order the
    # newest env would start last and run alone for five minutes while the other core idles.
    listed = releases(tox_ini)
    suite, newest = suite_releases(tox_ini), max(listed, key=release_key)
    ordered = sorted(listed, key=lambda v: (v != newest, v not in suite, release_key(v)))
    envs = ",".join(ENV_PREFIX + v for v in ordered)
    code = subprocess.call([sys.executable, "-m", "tox", "p", "-p", str(parallel), "-e", envs])
    rep = report()
    minutes = (time.monotonic() - start) / 60
    print(f"matrix: {len(releases(tox_ini))} releases in {minutes:.1f} min with {parallel} in parallel "
          f"(budget 30 min on 2 cores)")
    return code or rep


# -- release-to-release diffs (the matrix's own; a user's upgrade check is `hf-genfix upgrade-check`) -----------
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


def range_verdicts(manifests: Sequence[Any], new: Mapping[str, Any]) -> list[str]:
    """What the candidate release says about each manifest's range: still present, extend, close, or matches."""
    from packaging.version import Version

    nv = new.get("transformers") or "?"
    out = []
    for m in manifests:
        seen = new["patches"].get(m.id)
        if seen is None:
            continue
        inside, without = in_range(m.affected, nv), seen["without"]
        base = Version(Version(nv).base_version) if _VERSION.match(nv) else None
        fixed = [v for v in m.fixed_versions if base is not None and base >= Version(v)]
        if without == "defect" and inside:
            out.append(f"`{m.id}`: still present on {nv} (inside {m.affected})")
        elif without == "defect":
            out.append(f"`{m.id}`: present on {nv}, outside {m.affected}: EXTEND the range to {nv}")
        elif without == "pass" and inside:
            out.append(f"`{m.id}`: no defect on {nv}: upstream fixed? CLOSE the range (<{nv})")
        elif without == "pass" and fixed:
            out.append(f"`{m.id}`: upstream fixed ({fixed[-1]}) — matches the manifest")
        elif without == "pass":
            out.append(f"`{m.id}`: not affected — matches the manifest")
        else:
            out.append(f"`{m.id}`: probe {without} on {nv}: {seen.get('message', '')}")
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


# -- the CI workflow --------------------------------------------------------------------------------------------
def workflow_text(versions: Sequence[str]) -> str:
    # Action majors that run on node24: node20 was removed from GitHub's runners on 2026-09-23 (actionlint,
    # run by tests/tooling/test_matrix.py, rejects the older ones).
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
      - uses: actions/checkout@v6
      - uses: actions/setup-python@v6
        with:
          python-version: "3.11"
      - run: python -m pip install "tox>=4.20"
      - run: tox -e {ENV_PREFIX}${{{{ matrix.release }}}}
      - uses: actions/upload-artifact@v6
        if: always()
        with:
          name: doctor-${{{{ matrix.release }}}}
          path: tox-results/{ENV_PREFIX}${{{{ matrix.release }}}}.json
  report:
    needs: release
    if: always()
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v6
      - uses: actions/setup-python@v6
        with:
          python-version: "3.11"
      - uses: actions/download-artifact@v7
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
    p = sub.add_parser("releases")
    p.add_argument("--why", action="store_true", help="the boundaries each release of the derived list judges")
    p = sub.add_parser("sync")
    p.add_argument("--check", action="store_true")
    sub.add_parser("refresh")
    p = sub.add_parser("run")
    p.add_argument("env_name")
    p.add_argument("pytest_args", nargs="*")
    p = sub.add_parser("all")
    p.add_argument("-p", "--parallel", type=int, default=2)
    sub.add_parser("ci-envs")
    p = sub.add_parser("install")
    p.add_argument("spec", help="tf-X, X, newest (of the matrix), or any pip requirement for transformers")
    p.add_argument("--torch-dir", type=Path, help="where the torch shared by every env is installed")
    p = sub.add_parser("doctor")
    p.add_argument("env_name")
    p = sub.add_parser("report")
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--keep-committed", action="store_true",
                   help="a release with no fresh result keeps its column from docs/compat-matrix.json (a partial "
                        "rerun) instead of failing the report")
    p = sub.add_parser("workflow")
    p.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "releases":
        if not args.why:
            print("\n".join(releases()))
            return 0
        from packaging.version import Version

        oldest = matrix_settings()["oldest_supported"]
        supported = [v for v in published() if Version(v) >= Version(oldest)]
        for pid, pairs in boundaries(_manifests(), supported).items():
            print(f"{pid}: " + (", ".join(f"{a} | {b}" for a, b in pairs) or "no boundary in the supported range"))
        print(f"oldest supported {supported[0]}, newest {supported[-1]}; suite: {', '.join(suite_releases())}")
        return 0
    if args.command == "sync":
        return sync(args.check)
    if args.command == "refresh":
        return refresh()
    if args.command == "run":
        return run(args.env_name, args.pytest_args)
    if args.command == "all":
        return run_all(args.parallel)
    if args.command == "ci-envs":
        print(",".join(ci_envs()))
        return 0
    if args.command == "install":
        return install(args.spec, args.torch_dir, os.environ.get("GENFIX_TORCH"))
    if args.command == "doctor":
        return doctor(args.env_name)
    if args.command == "report":
        return report(args.results, keep_committed=args.keep_committed)
    return workflow(args.check)


if __name__ == "__main__":
    raise SystemExit(main())
