"""Judging what the envs saw: each doctor report digested, each range checked against it, and the changes from
one release to the next."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from .files import ENV_PREFIX, MATRIX_JSON, RESULTS, TOX_INI, VERSION
from .release_list import in_range, release_key, releases, split_env


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
        out["sweep_unknown"] = sorted([defect_key(d) for d in sweep.get("unknown", [])]
                                      + [f"{arch} / every scenario" for arch in sweep.get("unusable", {})])
        out["sweep_known"] = sorted(f"{defect_key(d)} ({d.get('explained_by') or d.get('id', '?')})" for d in sweep.get("known", []))
        if sweep.get("quick"):  # --quick: a fixed sample of the architectures, not the matrix's whole sweep
            out["sweep_quick"] = True
    return out


# Where an env installed transformers ("/work/.tox/tf-5.0.0/lib/python3.11/site-packages/") is the machine's,
# not the release's: the committed matrix keeps the path from site-packages on.
_MACHINE_PATH = re.compile(r"/[^\s()'\"]*?/site-packages/")


def defect_key(defect: Mapping[str, Any]) -> str:
    return f"{defect['arch']} / {defect['scenario']}"


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


def agrees(c: str) -> bool:
    return c in ("defect / fixed", "not needed", "n/a")


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
        base = Version(Version(nv).base_version) if VERSION.match(nv) else None
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
