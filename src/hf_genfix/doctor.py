"""``hf-genfix doctor``: run every patch's probe on this install and say what it found.

For each patch the probe (see docs/writing-a-patch.md) runs inside ``disabled(id)`` -- does the defect reproduce
without the patch? -- and, where the patch is installed, again with it -- does the patch fix it? A patch that is
not needed on this release is probed once, without it: a defect there means the manifest's ``affected`` range is
wrong. The probes run in this one process by switching the registry. Doctor imports every target module, which a
user's program does not: so each installed patch is also looked up in a fresh interpreter running the smallest
program that meets its defect (``hf_genfix.oracles.user_programs``, one interpreter per distinct program, run
while the probes do); a patch installed here but not there is ``unprotected``.

The exit status is non-zero when an installed patch's probe still fails, when a probe shows the defect on a
release its manifest calls unaffected (``catalog wrong``), when a needed patch could not be installed and the
defect is there, when a plain program does not get an installed patch, or when a probe is broken (an exception
other than DefectObserved / ProbeSkipped).

``--sweep`` then runs the general oracles over every decoder-only architecture of the installed release
(``hf_genfix.oracles.sweep``, progress on stderr) and reports the failures no manifest explains; a scenario the
model cannot do is ``unsupported`` and a defect of the catalog ``known``, neither changes the exit status.
``--differential`` also runs every scenario without hf_genfix and compares (never worse than upstream).

Time is reported against a budget, never judged: a slow run on a busy machine changes no verdict and no exit
status.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import json
import platform
import sys
import time
import traceback
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

SCHEMA = 1
BUDGET_S = 30.0

# Outcomes of one probe run.
PASS, DEFECT, SKIPPED, ERROR = "pass", "defect", "skipped", "error"

# Verdicts per patch; the first group makes the exit status non-zero.
NOT_FIXED = "not-fixed"            # installed, yet the probe still sees the defect
CATALOG_WRONG = "catalog-wrong"    # the defect shows on a release the manifest says is unaffected
UNPROTECTED = "unprotected"        # needed, could not be installed (drift / failed), defect present; or
                                   # installed here but not in a plain program that meets the defect
PROBE_ERROR = "probe-error"        # the probe itself is broken
FIXED = "fixed"                    # defect without the patch, none with it
NOT_NEEDED = "not-needed"          # outside the range and no defect
NOT_REPRODUCED = "not-reproduced"  # installed, but the probe sees no defect without it either
SKIPPED_VERDICT = "skipped"        # the scenario cannot run on this release
EXPOSED = "exposed"                # the user switched the patch off (or it is pending) and the defect is there
UNCHECKED = "unchecked"            # no defect seen, patch not installed for a reason other than the range
FAILING = (NOT_FIXED, CATALOG_WRONG, UNPROTECTED, PROBE_ERROR)


@dataclass
class ProbeRun:
    outcome: str  # pass | defect | skipped | error
    seconds: float
    message: str = ""
    figures: dict[str, Any] = field(default_factory=dict)


@dataclass
class PatchReport:
    id: str
    state: str
    reason: str
    affected: str
    in_range: bool | None
    summary: str
    verdict: str
    message: str
    without: ProbeRun | None
    with_patch: ProbeRun | None
    seconds: float
    targets: list[dict[str, Any]]
    # What a fresh interpreter running the smallest user program that meets the defect gets (installed patches).
    plain_program: dict[str, Any] | None = None

    @property
    def failing(self) -> bool:
        return self.verdict in FAILING

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["with"] = d.pop("with_patch")
        d["failing"] = self.failing
        return d


# -- running one probe ------------------------------------------------------------------------------------------
def run_probe(probe: Callable[[], Any]) -> ProbeRun:
    """Call ``probe()`` and classify what happened according to the probe contract."""
    from .oracles.outcome import DefectObserved, ProbeSkipped

    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            figures = probe()
    except DefectObserved as exc:
        return ProbeRun(DEFECT, time.perf_counter() - start, exc.message, _plain(exc.figures))
    except ProbeSkipped as exc:
        return ProbeRun(SKIPPED, time.perf_counter() - start, str(exc))
    except Exception as exc:  # noqa: BLE001 - anything else is a bug in the probe, reported as such
        where = traceback.extract_tb(exc.__traceback__)[-1]
        message = f"{type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})"
        return ProbeRun(ERROR, time.perf_counter() - start, message)
    return ProbeRun(PASS, time.perf_counter() - start, "", _plain(figures if isinstance(figures, dict) else {}))


def _plain(figures: dict[str, Any]) -> dict[str, Any]:
    """Figures as JSON values (tensors and numpy scalars become numbers, anything else its repr)."""
    out: dict[str, Any] = {}
    for key, value in figures.items():
        if isinstance(value, (bool, int, float, str)) or value is None:
            out[key] = value
        elif hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
            out[key] = value.item()
        elif isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float, str)) for v in value):
            out[key] = list(value)
        else:
            out[key] = repr(value)
    return out


def _load(spec: str) -> Callable[[], Any]:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def describe_target(target: str) -> dict[str, Any]:
    """Whether ``target`` exists on this install and its parameters: what the upgrade check compares.

    Only parameter names and kinds are kept (annotations are reformatted between releases without meaning
    anything to a fix); a target that is not callable is described by its type.
    """
    from ._patcher import Drift, resolve

    try:
        _, _, value = resolve(target)
    except Drift as exc:
        return {"target": target, "exists": False, "signature": None, "detail": str(exc)}
    func = getattr(value, "__func__", value)
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return {"target": target, "exists": True, "signature": f"<{type(value).__name__}>", "detail": ""}
    prefix = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    names = [prefix.get(p.kind, "") + p.name for p in params]
    return {"target": target, "exists": True, "signature": f"({', '.join(names)})", "detail": ""}


# -- judging one patch ------------------------------------------------------------------------------------------
def judge(state: str, in_range: bool | None, without: ProbeRun | None, with_patch: ProbeRun | None,
          version: str | None, affected: str) -> tuple[str, str]:
    """(verdict, message) from the patch's state and the probe runs."""
    runs = [r for r in (without, with_patch) if r is not None]
    for run in runs:
        if run.outcome == ERROR:
            return PROBE_ERROR, f"the probe is broken: {run.message}"
    if with_patch is not None:  # the patch is installed (applied or forced)
        if with_patch.outcome == DEFECT:
            return NOT_FIXED, f"the patch is installed but the defect remains: {with_patch.message}"
        if without is not None and without.outcome == DEFECT:
            if not in_range:
                return CATALOG_WRONG, (
                    f"catalog wrong: the defect shows on transformers {version}, outside affected {affected!r} "
                    f"(the patch is forced here and fixes it): {without.message}"
                )
            return FIXED, f"defect without the patch ({without.message}); fixed with it"
        if SKIPPED in (with_patch.outcome, getattr(without, "outcome", None)):
            return SKIPPED_VERDICT, (without if without and without.outcome == SKIPPED else with_patch).message
        if in_range is False:
            return NOT_NEEDED, f"the patch is forced on transformers {version}, outside {affected!r}; no defect"
        return NOT_REPRODUCED, (
            f"the probe sees no defect without the patch on transformers {version}, although {affected!r} "
            "includes it: the range may be too wide or the probe too weak"
        )
    assert without is not None
    if without.outcome == SKIPPED:
        return SKIPPED_VERDICT, without.message
    if without.outcome == DEFECT:
        if in_range is False:
            return CATALOG_WRONG, (
                f"catalog wrong: the defect shows on transformers {version}, which affected {affected!r} "
                f"excludes: {without.message}"
            )
        if state in ("drift", "failed"):
            return UNPROTECTED, f"the patch could not be installed ({state}) and the defect is present: " \
                                f"{without.message}"
        return EXPOSED, f"the patch is {state} and the defect is present: {without.message}"
    if in_range is False:
        return NOT_NEEDED, f"transformers {version} is outside {affected!r} and the probe sees no defect"
    return UNCHECKED, f"the patch is {state}; the probe sees no defect without it"


def judge_plain_program(report: PatchReport, plain: dict[str, Any]) -> None:
    """A patch installed here (doctor imports every target) but not in a plain program meeting its defect
    protects nobody: ``unprotected``, whatever the probes said."""
    from ._registry import INSTALLED

    report.plain_program = plain
    if plain.get("state") is None:
        report.message += f" (not checked in a plain program: {plain.get('error') or plain.get('reason')})"
        return
    if plain["state"] in INSTALLED or report.failing:
        return
    report.verdict = UNPROTECTED
    report.message = (
        f"a plain program does not get the patch: after `import hf_genfix, transformers` and "
        f"`{plain['imports']}` it is {plain['state']} ({plain['reason']})"
        + (f"; the program raised {plain['error']}" if plain.get("error") else "")
        + f"; only with every target imported, as here, is it {report.state}"
    )


def check_patch(registry: Any, status: Any, manifest: Any) -> PatchReport:
    from ._registry import INSTALLED, in_range

    start = time.perf_counter()
    version = status.transformers_version
    inside = in_range(manifest.affected, version) if version else None
    targets = [describe_target(t) for t in manifest.targets] if version else []
    without = with_patch = None
    try:
        probe = _load(manifest.probe)
    except Exception as exc:  # noqa: BLE001
        without = ProbeRun(ERROR, 0.0, f"cannot import probe {manifest.probe}: {type(exc).__name__}: {exc}")
    else:
        if status.state in INSTALLED:
            with registry.disabled(manifest.id):
                without = run_probe(probe)
            with_patch = run_probe(probe)
        else:
            without = run_probe(probe)
    state = status.state
    verdict, message = judge(state, inside, without, with_patch, version, manifest.affected)
    return PatchReport(
        id=manifest.id, state=state, reason=status.reason, affected=manifest.affected, in_range=inside,
        summary=manifest.summary, verdict=verdict, message=message, without=without, with_patch=with_patch,
        seconds=time.perf_counter() - start, targets=targets,
    )


# -- the whole run ----------------------------------------------------------------------------------------------
def import_targets(registry: Any) -> str | None:
    """Import every target module of ``registry``'s manifests so that each patch is decided."""
    import hf_genfix

    from . import cli
    from ._registry import transformers_version

    if registry is hf_genfix._default():
        return cli.load_targets()
    if transformers_version() is None:
        return None
    importlib.import_module("transformers")  # the version a registry gates on is the imported one
    for manifest in registry.manifests():
        for module in manifest.target_modules:
            with contextlib.suppress(ImportError):
                importlib.import_module(module)
    return transformers_version()


@contextlib.contextmanager
def quiet_logs() -> Iterator[None]:
    """Keep the log lines probes provoke on purpose (transformers' padding warnings, the pad-token patch's notice)
    out of the report; restored afterwards."""
    import logging

    ours = logging.getLogger("hf_genfix")
    our_level = ours.level
    ours.setLevel(logging.ERROR)
    try:
        from transformers.utils import logging as tlog
    except Exception:  # noqa: BLE001 - no transformers, nothing else to quieten
        tlog = None
    level = tlog.get_verbosity() if tlog else None
    if tlog:
        tlog.set_verbosity_error()
    try:
        yield
    finally:
        ours.setLevel(our_level)
        if tlog:
            tlog.set_verbosity(level)


def diagnose(registry: Any = None, only: Sequence[str] = (),
             plain_states: Callable[[list[tuple[str, str]]], Callable[[], dict[str, Any]]] | None = None,
             ) -> dict[str, Any]:
    """Run the catalog check on ``registry`` (the process-wide one by default); returns the JSON report.

    ``plain_states(patches)`` starts the plain-program check for the installed ``(id, family)`` pairs and returns
    the function that collects it (patch id -> record, see ``oracles.user_programs``); by default the real
    fresh interpreters, for the process-wide registry only (a fresh interpreter knows no other)."""
    import hf_genfix

    from ._registry import INSTALLED

    if registry is None:
        registry = hf_genfix._default()
    if plain_states is None and registry is hf_genfix._default():
        from .oracles.user_programs import PlainRun

        plain_states = lambda patches: PlainRun(patches).results  # noqa: E731
    start = time.perf_counter()
    version = import_targets(registry)
    manifests = {m.id: m for m in registry.manifests()}
    unknown = [p for p in only if p not in manifests]
    if unknown:
        raise SystemExit(f"hf-genfix doctor: unknown patch id(s) {unknown}; known: {sorted(manifests)}")
    patches: list[PatchReport] = []
    if version is not None:
        statuses = [s for s in registry.status() if not only or s.id in only]
        installed = [(s.id, s.family) for s in statuses if s.state in INSTALLED]
        # Started before the probes, read after: the fresh interpreters run while the probes do.
        collect = plain_states(installed) if plain_states is not None and installed else None
        with quiet_logs():
            for status in statuses:
                patches.append(check_patch(registry, status, manifests[status.id]))
        if collect is not None:
            plain = collect()
            for report in patches:
                if report.id in plain:
                    judge_plain_program(report, plain[report.id])
    elapsed = time.perf_counter() - start
    return {
        "schema": SCHEMA,
        "hf_genfix": hf_genfix.__version__,
        "transformers": version,
        "torch": _dist_version("torch"),
        "python": platform.python_version(),
        "seconds": round(elapsed, 3),
        "budget_seconds": BUDGET_S,
        "ok": not any(p.failing for p in patches),
        "patches": [p.to_dict() for p in patches],
    }


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


# -- output -----------------------------------------------------------------------------------------------------
# What each verdict means to the user, for the text report (docs/matrix.md has the same table).
MEANING = {
    FIXED: "the defect shows without the patch and the patch removes it",
    NOT_NEEDED: "this release does not have the defect; the patch stays out",
    SKIPPED_VERDICT: "the probe's scenario cannot run on this release",
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


def _time_line(seconds: float, budget: float) -> str:
    """The time taken and the budget, as information: a busy machine is slow, not wrong."""
    note = "over the budget: a busy machine, not a failure" if seconds > budget else "within the budget"
    return f"took {seconds:.1f} s (budget {budget:.0f} s, {note})"


def render_text(report: dict[str, Any]) -> str:
    lines = [
        f"hf-genfix doctor: transformers {report['transformers'] or 'not installed'}, torch {report['torch']}, "
        f"python {report['python']}, hf_genfix {report['hf_genfix']}"
        + (f", {report['dtype']} on {report['device']}" if report.get("dtype", "float32") != "float32"
           or report.get("device", "cpu") != "cpu" else "")
    ]
    if report["transformers"] is None:
        lines.append("transformers is not installed: nothing to check")
        return "\n".join(lines)
    rows = [("patch", "state", "without patch", "with patch", "verdict", "time")]
    for p in report["patches"]:
        rows.append((p["id"], p["state"], _cell(p["without"]), _cell(p["with"]), p["verdict"],
                     f"{p['seconds']:.2f}s"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    notes = [p for p in report["patches"] if p["verdict"] not in (FIXED, NOT_NEEDED)]
    if notes:
        lines.append("")
        for p in notes:
            mark = "FAIL" if p["failing"] else "note"
            lines.append(f"{mark} {p['id']}: {p['message']}")
    lines.extend(_legend(report["patches"]))
    failing = [p["id"] for p in report["patches"] if p["failing"]]
    lines.append("")
    lines.append(
        f"{'FAILED' if failing else 'OK'}: {len(report['patches'])} patches checked; "
        + _time_line(report["seconds"], report["budget_seconds"])
        + (f"; failing: {', '.join(failing)}" if failing else "")
    )
    sweep = report.get("sweep")
    if sweep is not None:
        from .oracles import sweep as sweep_mod

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


def main(argv: Sequence[str] | None = None, registry: Any = None) -> int:
    parser = argparse.ArgumentParser(
        prog="hf-genfix doctor",
        description="Run every patch's probe on this install: does the defect reproduce without the patch, "
                    "does the patch fix it.",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--output", metavar="FILE", help="also write the JSON report to FILE")
    parser.add_argument("--patch", action="append", default=[], metavar="ID", help="check only these patches")
    parser.add_argument("--sweep", action="store_true",
                        help="also run the general oracles over every decoder-only architecture of this release")
    parser.add_argument("--arch", action="append", default=[], metavar="MODEL_TYPE",
                        help="with --sweep: only these model types (repeatable)")
    parser.add_argument("--scenario", action="append", default=[], metavar="NAME",
                        help="with --sweep: only these scenarios (repeatable)")
    parser.add_argument("--sweep-budget", type=float, default=None, metavar="SECONDS",
                        help="with --sweep: stop starting new architectures after this many seconds")
    parser.add_argument("--differential", action="store_true",
                        help="with --sweep: also run every scenario without hf_genfix and compare the outputs "
                             "(never worse than upstream; about twice the time)")
    parser.add_argument("--quiet", action="store_true", help="with --sweep: no progress lines on stderr")
    parser.add_argument("--dtype", default="float32", metavar="DTYPE",
                        help="build the probes' models in DTYPE: float32 (default), bfloat16 or float16; logits "
                             "are compared within that dtype's tolerance (docs/precision.md)")
    parser.add_argument("--device", default="cpu", metavar="DEVICE",
                        help="run the probes on DEVICE (default cpu; e.g. cuda, cuda:1)")
    args = parser.parse_args(list(argv or []))
    if args.differential and not args.sweep:
        parser.error("--differential goes with --sweep")

    from .oracles.precision import dtype_name, precision

    try:
        dtype = dtype_name(args.dtype)
    except ValueError as exc:
        parser.error(str(exc))
    with precision(dtype, args.device) as setting:
        return _main(args, registry, setting)


def _main(args: argparse.Namespace, registry: Any, setting: Any) -> int:
    report = diagnose(registry, only=args.patch)
    report["dtype"], report["device"] = setting.dtype, setting.device
    exit_code = 0 if report["ok"] else 1
    if args.sweep and report["transformers"] is not None:
        from .oracles import sweep as sweep_mod

        # Model code that prints (4.x CTRL and Reformer: "Warning: attention_mask is not a recognized input." on
        # every prepare_inputs_for_generation call) goes to stderr with the progress, not into the report.
        with quiet_logs(), contextlib.redirect_stdout(sys.stderr):
            report["sweep"] = sweep_mod.run_sweep(
                registry, archs=args.arch or None, scenarios=args.scenario or None, budget_s=args.sweep_budget,
                differential_all=args.differential, progress=None if args.quiet else sweep_mod.stderr_progress,
            )
        if sweep_mod.failed(report["sweep"]):
            exit_code = 1
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        with open(args.output, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
            fh.write("\n")
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render_text(report))
    return exit_code
