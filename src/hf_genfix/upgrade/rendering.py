"""The text report: the summary first, then what to read."""

from __future__ import annotations

from typing import Any, Mapping

from ..verdicts import Word


def render(result: Mapping[str, Any], verbose: bool = False) -> str:
    """The summary, then what to read: each regression (its failure lines, its rerun command), each scenario
    that changed with hf_genfix, each patch that needs a decision or that your models and tests go through.
    ``verbose``: every patch and scenario."""
    version = result["to"]
    out = list(result["summary"]["lines"])
    tests = result.get("tests")
    if tests and tests["regressions"]:
        out += ["", f"your tests that pass on {result['from']} and fail on {version}:"]
        for r in tests["regressions"]:
            out.append(f"  {r['id']} ({r['there']} there)")
            out += [f"      {ln}" for ln in r["lines"]]
            out.append(f"      rerun there: {r['rerun']}")
    if result.get("models") is not None:
        shown, hidden = [], 0
        for m in result["models"]:
            w, u = m["with"], m["without"]
            if w["result"] == Word.IDENTICAL and (u["result"] == Word.IDENTICAL or not verbose):
                hidden += u["result"] != Word.IDENTICAL
                continue
            line = f"  {m['model']} / {m['scenario']}: {_describe(w)}"
            if u["result"] != w["result"] or verbose:
                line += f"; upstream: {_describe(u)}"
            if m["explained_by"]:
                line += f" -- accounted for by {', '.join(m['explained_by'])}"
            elif m["unexplained"]:
                line += " -- UNEXPLAINED"
            shown.append(line[:400])
        if shown:
            out += ["", "your models (with hf_genfix on both releases; 'upstream' = without hf_genfix):"] + shown
        if hidden:
            out.append(f"  ({hidden} scenarios differ or fail between the releases without hf_genfix and are "
                       "identical with it: --verbose)")
    used = result["summary"].get("patches_used") or {}
    rows = [p for p in result["patches"] if verbose or p["unexplained"] or p["id"] in used]
    if rows:
        out += ["", f"patches ({result['from']} -> {version})"
                + ("" if verbose else ": those that need a decision or that your models and tests go through")
                + ":"]
        for p in rows:
            out.append(f"  {p['id']}: {p['change']}" + (" [UNEXPLAINED]" if p["unexplained"] else ""))
            for note in p["notes"]:
                if verbose or "signature drift" not in note:
                    out.append(f"      {note}")
    return "\n".join(out)


def _describe(c: Mapping[str, Any]) -> str:
    if c["result"] == Word.IDENTICAL:
        return Word.IDENTICAL
    if c["result"] == Word.DIFFERS:
        by = "an incomparable amount" if c["max_logit_diff"] is None else f"{c['max_logit_diff']:.3g}"
        if c.get("tokens_identical"):
            return f"same tokens, scores differ by {by}"
        return f"differs from step {c['first_step']} (max score difference {by} up to it)"
    if c["result"] == Word.FAILS:
        return f"fails on the {'candidate' if c['side'] == 'there' else 'current release'}: {c['error']}"
    if c["now"] == c["there"]:
        return f"fails on both: {c['there']}"
    return f"fails on both: now {c['now']}; there {c['there']}"
