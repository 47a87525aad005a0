"""The text report: the verdict and what needs attention; with --verbose, every patch."""

from __future__ import annotations

from typing import Any

from .report import (
    ATTENTION,
    CATALOG_WRONG,
    DEFECT,
    ERROR,
    EXPOSED,
    FAILING,
    FIXED,
    NOT_FIXED,
    NOT_NEEDED,
    NOT_REPRODUCED,
    OPEN,
    PASS,
    PROBE_ERROR,
    SKIPPED,
    SKIPPED_VERDICT,
    UNCHECKED,
    UNPROTECTED,
)

# What each verdict means to the user, for the text report (docs/matrix.md has the same table).
MEANING = {
    FIXED: "the defect shows without the patch and the patch removes it",
    NOT_NEEDED: "this release does not have the defect; the patch stays out",
    SKIPPED_VERDICT: "the probe's scenario cannot run on this release",
    OPEN: "outside the range, the probe's path is wrong here for another reason on file (patches/open-findings.json)",
    NOT_REPRODUCED: "inside the patch's range, yet no defect without it: the range may be too wide",
    EXPOSED: "the patch is switched off or not installed yet, and the defect is there",
    UNCHECKED: "the patch is switched off or not installed yet; no defect seen without it",
    CATALOG_WRONG: "the defect shows on a release the manifest calls unaffected",
    NOT_FIXED: "the patch is installed and the defect is still there",
    UNPROTECTED: "the patch is needed but could not be installed, and the defect is there",
    PROBE_ERROR: "the probe itself is broken",
}


def _cell(run: dict[str, Any] | None) -> str:
    if run is None:
        return "-"
    figures = run.get("figures") or {}
    diff = figures.get("max_logit_diff")
    detail = f", diff {diff:.3g}" if isinstance(diff, (int, float)) else ""
    return {PASS: "no defect", DEFECT: "DEFECT", SKIPPED: "skipped", ERROR: "PROBE ERROR"}[run["outcome"]] + detail


def render_text(report: dict[str, Any], verbose: bool = False) -> str:
    """The verdict and what needs attention; with ``verbose`` first the table of every patch and the legend."""
    lines = [
        f"hf-genfix doctor: transformers {report['transformers'] or 'not installed'}, torch {report['torch']}, "
        f"python {report['python']}, hf_genfix {report['hf_genfix']}"
        + (f", {report['dtype']} on {report['device']}" if report.get("dtype", "float32") != "float32"
           or report.get("device", "cpu") != "cpu" else "")
    ]
    if report.get("unsupported"):
        lines.append(report["unsupported"])
    if report["transformers"] is None:
        lines.append("transformers is not installed: nothing to check")
        return "\n".join(lines)
    patches = report["patches"]
    if verbose:
        rows = [("patch", "state", "without patch", "with patch", "verdict", "time")]
        for p in patches:
            rows.append((p["id"], p["state"], _cell(p["without"]), _cell(p["with"]), p["verdict"],
                         f"{p['seconds']:.2f}s"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for row in rows:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        lines.extend(_legend(patches))
        lines.append("")
    for p in patches:
        if p["failing"] or p["verdict"] in ATTENTION or (verbose and p["verdict"] not in (FIXED, NOT_NEEDED)):
            lines.append(f"{'FAIL' if p['failing'] else 'note'} {p['id']}: {p['message']}")
    failing = [p["id"] for p in patches if p["failing"]]
    counts: dict[str, int] = {}
    for p in patches:
        counts[p["verdict"]] = counts.get(p["verdict"], 0) + 1
    verdict = "UNVERIFIED RELEASE" if report.get("unsupported") else "FAILED" if failing else "OK"
    lines.append(
        f"{verdict}: {len(patches)} patches checked in {report['seconds']:.0f} s ("
        + ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1])) + ")"
        + (f"; failing: {', '.join(failing)}" if failing else "")
        + ("" if verbose else "; each patch and what its probe saw: hf-genfix doctor --verbose")
    )
    sweep = report.get("sweep")
    if sweep is not None:
        from ..oracles import sweep as sweep_mod

        lines.append("")
        lines.append(sweep_mod.render_text(sweep))
    return "\n".join(lines)


def _legend(patches: list[dict[str, Any]]) -> list[str]:
    """What the table's words and numbers mean, and what each patch is about (its one-line summary)."""
    if not patches:
        return []
    lines = ["", "What the columns say: \"without patch\" / \"with patch\" is what the patch's probe saw; "
                 "\"diff\" is the max |logit| difference against the oracle (a no-cache forward of each unpadded "
                 "row; at most 1e-4 is correct)."]
    for verdict in dict.fromkeys(p["verdict"] for p in patches):
        lines.append(f"  {verdict}: {MEANING.get(verdict, '')}" + (" (exit status 1)" if verdict in FAILING else ""))
    lines.append("The patches:")
    width = max(len(p["id"]) for p in patches)
    lines += [f"  {p['id'].ljust(width)}  {p['summary']}" for p in patches]
    return lines
