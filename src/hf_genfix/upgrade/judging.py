"""Judging what the two releases did: per patch, per model scenario, per test; and the summary's verdict."""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

from ..verdicts import DOCTOR_FAILING, Word
from .running import rerun_command

INSTALLED = ("applied", "forced")


FAILING = DOCTOR_FAILING  # doctor.FAILING, without importing doctor


LOGIT_TOL = 1e-4  # float32 scores that differ by less are the same computation reordered


def compare_patches(now: Mapping[str, Any], there: Mapping[str, Any],
                    fixed_versions: Mapping[str, Sequence[str]] | None = None) -> list[dict[str, Any]]:
    """Per patch, from two doctor reports: what it does now, what it does on the candidate, what that means.

    ``change`` is one of: ``applies now and there`` / ``applies there`` (new on the candidate: its defect is
    there) / ``upstream fixed there`` (applies now; the candidate has no defect and no patch) / ``still present``
    (applies now, the defect is there, the patch applies there) / ``not needed there`` (applies now, the candidate
    is outside its range without a recorded upstream fix, e.g. an older release) / ``range must grow`` (the defect is there,
    outside the manifest's range: the candidate runs unpatched) / ``broken there`` (the patch no longer fixes it
    or its probe errors) / ``unchanged`` (needed on neither). ``unexplained`` is set where the user must look."""
    fixed_versions = fixed_versions or {}
    version = there.get("transformers") or "?"
    rows = []
    old = {p["id"]: p for p in now.get("patches", [])}
    for p in there.get("patches", []):
        o = old.get(p["id"])
        applies_now = bool(o) and o["state"] in INSTALLED
        applies_there = p["state"] in INSTALLED
        without = (p.get("without") or {}).get("outcome")
        row = {"id": p["id"], "state_now": o["state"] if o else None, "state_there": p["state"],
               "applies_now": applies_now, "applies_there": applies_there, "defect_there": without == "defect",
               "verdict_there": p["verdict"], "affected": p["affected"], "unexplained": False, "notes": []}
        if p["verdict"] == "catalog-wrong":
            row["change"], row["unexplained"] = "range must grow", True
            row["notes"].append(f"the defect is on {version}, outside {p['affected']}: it runs unpatched there")
        elif p["verdict"] in FAILING:
            row["change"], row["unexplained"] = "broken there", True
            row["notes"].append(f"doctor on {version}: {p['verdict']}: {p.get('message', '')}")
        elif applies_now and applies_there:
            row["change"] = "still present" if without == "defect" else "applies now and there"
        elif applies_there:
            row["change"] = "applies there"
        elif applies_now:
            # Fixed upstream when the manifest names a fix at or below the candidate; else the candidate is
            # outside the range for another reason (an older release, before the defect came in).
            fixed = [v for v in fixed_versions.get(p["id"], ()) if _at_most(v, version)]
            row["change"] = "upstream fixed there" if fixed else "not needed there"
            row["notes"].append(f"fixed upstream in {fixed[-1]}" if fixed else
                                f"{version} is outside {p['affected']} and its probe sees no defect there")
        else:
            row["change"] = "unchanged"
        if o is not None:
            before = {t["target"]: t.get("signature") if t.get("exists") else None for t in o.get("targets", [])}
            for t in p.get("targets", []):
                after = t.get("signature") if t.get("exists") else None
                if t["target"] in before and before[t["target"]] != after and applies_there:
                    row["notes"].append(f"signature drift (not a decision: the probe still passes with the "
                                        f"patch): {t['target']} {before[t['target']]} -> {after}")
        rows.append(row)
    return rows


def _at_most(a: str, b: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a) <= Version(Version(b).base_version)
    except InvalidVersion:
        return False


def _max_diff(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Largest |a - b| over two nested lists of floats of the same shape (equal infinities count as 0)."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if a == b:
            return 0.0
        d = abs(a - b)
        return d if not math.isnan(d) else math.inf
    if len(a) != len(b):
        return math.inf
    return max((_max_diff(x, y) for x, y in zip(a, b)), default=0.0)


def compare_scenario(now: Mapping[str, Any] | None, there: Mapping[str, Any] | None) -> dict[str, Any]:
    """One scenario on the two releases: ``identical`` / ``differs`` (first differing step among the new
    tokens, largest score difference up to that step) / ``fails`` (on which side) / ``fails on both``."""
    now, there = now or {"error": "not run"}, there or {"error": "not run"}
    if "error" in now or "error" in there:
        if "error" in now and "error" in there:
            return {"result": Word.FAILS_ON_BOTH, "now": now["error"], "there": there["error"]}
        side = "there" if "error" in there else "now"
        return {"result": Word.FAILS, "side": side, "error": (there if side == "there" else now)["error"]}
    a, b = now["tokens"], there["tokens"]
    steps = len(now.get("scores") or [])
    prompt = (len(a[0]) - steps) if a and steps else 0
    first = None
    if len(a) != len(b):
        first = 0
    else:
        for ra, rb in zip(a, b):
            for i in range(max(len(ra), len(rb))):
                if i >= len(ra) or i >= len(rb) or ra[i] != rb[i]:
                    step = max(i - prompt, 0)
                    first = step if first is None else min(first, step)
                    break
    upto = len(now.get("scores") or []) if first is None else first + 1
    diff = _max_diff(now.get("scores", [])[:upto], there.get("scores", [])[:upto])
    if not math.isfinite(diff):
        diff = None  # the scores differ in shape or in where they are infinite: no number says how much (JSON)
    if first is None and diff is not None and diff <= LOGIT_TOL:
        return {"result": Word.IDENTICAL, "max_logit_diff": diff}
    return {"result": Word.DIFFERS, "first_step": first, "max_logit_diff": diff,
            "tokens_identical": first is None}


def explain(scenario: str, states_now: Mapping[str, str], states_there: Mapping[str, str],
            families: Mapping[str, str], seen: Iterable[str] = ()) -> list[str]:
    """The patches that can account for a difference in ``scenario``: their state differs between the two runs
    (one release installs it, the other does not) and their family is one the scenario exercises. Where some of
    them were called in the scenario (or while the model loaded), on either release, only those."""
    from ..upgrade_scenarios import ALL_SCENARIOS

    wanted = ALL_SCENARIOS.get(scenario, ("", ()))[1]
    out = []
    for pid in sorted(set(states_now) | set(states_there)):
        a, b = states_now.get(pid), states_there.get(pid)
        if (a in INSTALLED) != (b in INSTALLED) and families.get(pid) in wanted:
            out.append(pid)
    used = [pid for pid in out if pid in set(seen)]
    return used or out


def compare_models(results: Mapping[str, Mapping[str, Any]], families: Mapping[str, str]) -> list[dict[str, Any]]:
    """``results[model][run]`` with run in now-on, now-off, there-on, there-off -> one row per model and
    scenario: with hf_genfix (what you would get after upgrading) and without (upstream alone). The tokenizer
    scenarios are rows only where some run had them (the folder holds a tokenizer)."""
    from ..upgrade_scenarios import ALL_SCENARIOS, SCENARIOS

    rows = []
    for model, runs in results.items():
        states_now = runs["now-on"].get("patches", {})
        states_there = runs["there-on"].get("patches", {})
        for name in ALL_SCENARIOS:
            if name not in SCENARIOS and not any(name in r.get("scenarios", {}) for r in runs.values()):
                continue
            get = lambda run: runs[run].get("scenarios", {}).get(name) or (  # noqa: E731
                {"error": runs[run]["error"]} if "error" in runs[run] else None)
            row = {"model": model, "scenario": name,
                   "with": compare_scenario(get("now-on"), get("there-on")),
                   "without": compare_scenario(get("now-off"), get("there-off"))}
            row["explained_by"] = []
            seen = set()
            for run in ("now-on", "there-on"):
                seen |= set(runs[run].get("load_patches_seen", []))
                seen |= set((runs[run].get("scenarios", {}).get(name) or {}).get("patches_seen", []))
            # Failing now and working on the candidate is an improvement to know about, not a risk.
            row["improves"] = row["with"]["result"] == Word.FAILS and row["with"]["side"] == "now"
            # Failing on both releases, with hf_genfix, compares nothing: no evidence either way.
            row["no_evidence"] = row["with"]["result"] == Word.FAILS_ON_BOTH
            changed = row["with"]["result"] in (Word.DIFFERS, Word.FAILS) and not row["improves"]
            if changed:
                row["explained_by"] = explain(name, states_now, states_there, families, seen)
            row["unexplained"] = changed and not row["explained_by"]
            rows.append(row)
    return rows


def patch_calls(run: Mapping[str, Any]) -> dict[str, int]:
    """Calls per patch in one scenario run (loading included), as ``hf_genfix.recording()`` counted them."""
    out: dict[str, int] = {}
    for part in [run] + list((run.get("scenarios") or {}).values()):
        for pid, n in (part.get("patch_calls") or {}).items():
            out[pid] = out.get(pid, 0) + int(n)
    return out


def regressions(now: Mapping[str, str], there: Mapping[str, str]) -> list[str]:
    """Tests that pass now and fail (or error, or are missing) on the candidate."""
    return sorted(t for t, outcome in now.items() if outcome == "passed" and there.get(t, "missing")
                  in ("failed", "error", "missing"))


def explain_regressions(ids: Sequence[str], there: Mapping[str, Any], python: str,
                        cwd_on_path: bool = False) -> list[dict[str, Any]]:
    """Per regressing test: what it did on the candidate, its failure lines (for a test not collected there,
    those of its module's collection error) and the command that reruns it there."""
    out = []
    for t in ids:
        outcome = there["outcomes"].get(t, "missing")
        lines = list(there["lines"].get(t) or [])
        if not lines:
            module = t.split("::")[0]
            for where, err in there.get("collect_errors", {}).items():
                if module.startswith(where.split("::")[0]) or where in ("", "."):
                    lines = [f"(not collected: {where or 'the session'} failed to collect)"] + list(err)
                    break
        if not lines and not there["outcomes"]:  # pytest ran nothing there: what it printed last says why
            lines = [f"(pytest ran no test there, exit {there.get('exit')})"] + list(there.get("output_tail") or [])
        error = next((ln[1:].strip() for ln in lines if ln.startswith("E ") and ln[1:].strip()), None)
        out.append({"id": t, "there": outcome, "error": error or (lines[0] if lines else outcome), "lines": lines,
                    "rerun": rerun_command(python, t, cwd_on_path)})
    return out


def summarize(version: str, current: str, patches: Sequence[Mapping[str, Any]],
              models: Sequence[Mapping[str, Any]] | None, tests: Mapping[str, Any] | None,
              used: Mapping[str, int] | None = None,
              tokenizers: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The lines that come first: your models, your tests, the patches they go through, then one line about the
    rest of the catalog, and the verdict. Nothing compared (no scenario of a model ran on either release, no
    test ran now) is no evidence, and never a pass."""
    applying = [p["id"] for p in patches if p["applies_there"]]
    odd = [p for p in patches if p["unexplained"]]
    used = dict(used or {})
    s: dict[str, Any] = {"from": current, "to": version, "patches_applying": applying,
                         "patches_unexplained": [p["id"] for p in odd], "patches_used": used}
    no_evidence: list[str] = []
    lines = [f"upgrade to {version} (from {current})"]
    if models is not None:
        same = sum(1 for m in models if m["with"]["result"] == Word.IDENTICAL)
        improves = sum(1 for m in models if m.get("improves"))
        differ = [m for m in models if m["with"]["result"] in (Word.DIFFERS, Word.FAILS) and not m.get("improves")]
        both = sum(1 for m in models if m["with"]["result"] == Word.FAILS_ON_BOTH)
        unexplained = [m for m in differ if m["unexplained"]]
        s.update(scenarios=len(models), identical=same, differ=len(differ), unexplained=len(unexplained),
                 fail_on_both=both, work_only_there=improves)
        for model in dict.fromkeys(m["model"] for m in models):
            rows = [m for m in models if m["model"] == model]
            lines.append("  " + _model_line(model, rows, (tokenizers or {}).get(model)))
            if all(m["with"]["result"] == Word.FAILS_ON_BOTH for m in rows):
                no_evidence.append(f"no scenario of {model} ran on either release")
    if tests is not None:
        regs = tests["regressions"]
        ran_now = [t for t, o in tests["now"].items() if o in ("passed", "failed", "error")]
        passing = sum(1 for o in tests["now"].values() if o == "passed")
        s.update(regressions=[r["id"] for r in regs], tests_now=len(tests["now"]), tests_there=len(tests["there"]))
        if not ran_now:
            why = "; ".join(tests.get("output_now") or []) or "no output"
            lines.append(f"  your tests: pytest ran no test on {current} (exit {tests.get('exit_now')}: {why[-200:]})")
            no_evidence.append(f"pytest ran no test on {current}")
        else:
            lines.append(f"  your tests: {len(regs)} regression{'s' if len(regs) != 1 else ''} ({passing} of "
                         f"{len(ran_now)} pass on {current}; {len(tests['there'])} run on {version})")
            for r in regs[:5]:
                lines.append(f"    {r['id']}: {r['error']}"[:160])
            if len(regs) > 5:
                lines.append(f"    ... {len(regs) - 5} more below")
    if used:
        top = sorted(used.items(), key=lambda kv: (-kv[1], kv[0]))
        lines.append(f"  patches your {_whose(models, tests)} go through on {version}: "
                     + ", ".join(f"{pid} ({n} calls)" for pid, n in top[:8])
                     + (f" and {len(top) - 8} more" if len(top) > 8 else ""))
    elif models is not None or tests is not None:
        lines.append(f"  no hf_genfix patch is called by your {_whose(models, tests)} on {version}")
    others = [pid for pid in applying if pid not in used]
    lines.append(f"  hf_genfix on {version}: {len(applying)} patches apply"
                 + (f" ({len(others)} not called by what was run here)" if (models or tests) is not None else "")
                 + (f"; {len(odd)} need a decision: " + ", ".join(f"{p['id']} ({p['change']})" for p in odd)
                    if odd else "; none needs a decision")
                 + "; every patch: --verbose or --json")
    s["unsafe"] = bool(odd) or bool(models and any(m["unexplained"] for m in models)) or bool(
        tests and tests["regressions"])
    s["no_evidence"] = no_evidence
    if s["unsafe"]:
        lines.append("verdict: something unexplained changed: read the lines below before upgrading")
    elif no_evidence:
        lines.append("verdict: not shown safe: " + "; ".join(no_evidence) + " (nothing was compared)")
    else:
        lines.append("verdict: nothing unexplained changed")
    s["verdict"] = "unsafe" if s["unsafe"] else "no evidence" if no_evidence else "pass"
    s["lines"] = lines
    return s


def _whose(models: Any, tests: Any) -> str:
    return " and ".join(w for w, given in (("models", models is not None), ("tests", tests is not None)) if given)


def _model_line(model: str, rows: Sequence[Mapping[str, Any]], tok: Mapping[str, Any] | None) -> str:
    same = sum(1 for m in rows if m["with"]["result"] == Word.IDENTICAL)
    differ = [m for m in rows if m["with"]["result"] in (Word.DIFFERS, Word.FAILS) and not m.get("improves")]
    unexplained = sum(1 for m in differ if m["unexplained"])
    both = [m for m in rows if m["with"]["result"] == Word.FAILS_ON_BOTH]
    improves = sum(1 for m in rows if m.get("improves"))
    if len(both) == len(rows):
        return f"model {model}: no scenario ran on either release ({both[0]['with']['there']})"[:300]
    how = (f" ({unexplained} unexplained)" if unexplained else " (all explained by patches whose state changes)"
           if differ else "")
    line = (f"model {model}: {same} of {len(rows)} scenarios identical with hf_genfix, {len(differ)} differ{how}"
            + (f", {improves} fail now and work there" if improves else "")
            + (f", {len(both)} fail on both releases (no evidence)" if both else ""))
    if tok:
        line += f"; {tok['summary']}"
    return line


FACTS = ("pad_token", "pad_token_id", "padding_side", "eos_token", "chat_template", "error")  # not the class


def tokenizer_facts(runs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """The checkpoint's tokenizer as each release loads it (pad token, padding side, chat template), with
    hf_genfix (``now``, ``there``) and without it, and what changed between the releases in either (a class
    renamed across releases is not a change a program sees); None when the folder has no tokenizer."""
    if not any(r.get("tokenizer") for r in runs.values()):
        return None
    facts = {run: {k: v for k, v in (runs.get(run, {}).get("tokenizer") or {}).items() if k in FACTS}
             for run in ("now-on", "there-on", "now-off", "there-off")}
    changed = {}
    for label, (a, b) in (("", ("now-on", "there-on")), ("upstream ", ("now-off", "there-off"))):
        for k in FACTS:
            x, y = facts[a].get(k), facts[b].get(k)
            if x != y:
                changed[f"{label}{k}"] = [x, y]
    b = facts["there-on"]
    if "error" in b:
        desc = f"tokenizer fails to load there: {b['error']}"
    else:
        desc = (f"tokenizer {'with' if b.get('chat_template') else 'without'} chat template, pad "
                f"{b.get('pad_token')!r}, padding {b.get('padding_side')}")
        if facts["there-off"].get("pad_token") != b.get("pad_token"):
            desc += f" (pad {facts['there-off'].get('pad_token')!r} without hf_genfix)"
    if changed:
        desc += "; CHANGED: " + ", ".join(f"{k} {v[0]!r} -> {v[1]!r}" for k, v in changed.items())
    return {"now": facts["now-on"], "there": b, "changed": changed, "summary": desc}


def sweep_unknown(report: Mapping[str, Any]) -> set[str]:
    sweep = report.get("sweep") or {}
    return {f"{d['arch']} / {d['scenario']}" for d in sweep.get("unknown", [])}
