"""``hf-genfix doctor``: run every patch's probe on this install and say what it found.

For each patch the probe (see docs/writing-a-patch.md) runs inside ``disabled(id)`` -- does the defect reproduce
without the patch? -- and, where the patch is installed, again with it -- does the patch fix it? A patch that is
not needed on this release is probed once, without it: a defect there means the manifest's ``affected`` range is
wrong. The probes run in this one process by switching the registry. Doctor imports every target module, which a
user's program does not: so each installed patch is also looked up in a fresh interpreter running the smallest
program that meets its defect (``hf_genfix.oracles.user_programs``, one interpreter per distinct program, run
while the probes do); a patch installed here but not there is ``unprotected``. Those interpreters start in a private
empty folder, with ``-P`` on Python 3.11+ (``hf_genfix._child``): nothing in the folder doctor runs from is
imported.

The exit status is non-zero when an installed patch's probe still fails, when a probe shows the defect on a
release its manifest calls unaffected (``catalog wrong``), when a needed patch could not be installed and the
defect is there, when a plain program does not get an installed patch, or when a probe is broken (an exception
other than DefectObserved / ProbeSkipped).

``--sweep`` then runs the general oracles over every decoder-only, encoder-decoder and image-text architecture of
the installed release (``hf_genfix.oracles.sweep``, progress on stderr) and reports the failures no manifest
explains; a scenario the model cannot do is ``unsupported`` and a defect of the catalog ``known``, neither changes
the exit status.
``--differential`` also runs every scenario without hf_genfix and compares (never worse than upstream); ``--recall``
says how many of the defects the probes show here the sweep finds by itself (K of N, each miss with why).

Exit status: 0 every patch checks out; 1 a failing patch (above), or a new defect with ``--sweep``; 2 a usage
error (every argument is checked before the first probe: an ``--output`` whose folder is missing or takes no file,
an unknown ``--patch``, ``--dtype``, ``--arch`` or ``--scenario``, a bad number), what the probes need is missing
(torch, or the ``--device`` asked for), or the report could not be written at the end; each said in one line; 3 the
installed transformers is outside the range hf_genfix has verified (older than the oldest or newer than the newest
release of the matrix): the checks still run and are reported, but their findings are about a release nobody
verified.

The text report is a verdict and what needs attention; ``--verbose`` adds the table of every patch and what each
probe saw, ``--json`` the whole report. Time is reported, never judged: a slow run on a busy machine changes no
verdict and no exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import difflib
import importlib
import inspect
import json
import math
import os
import platform
import sys
import tempfile
import threading
import time
import traceback
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from . import catalog
from ._fork import reset_in_child
from .verdicts import DOCTOR_FAILING, Word

SCHEMA = 1
BUDGET_S = 15.0  # a quiet 2-core machine: 13 s measured on 5.24.0 with 74 patches (JSON ``budget_seconds``); information only

# Exit statuses (the module docstring says what each means).
EXIT_OK, EXIT_FAILING, EXIT_USAGE, EXIT_UNSUPPORTED = 0, 1, 2, 3

# Outcomes of one probe run.
PASS, DEFECT, SKIPPED, ERROR = Word.PASS, Word.DEFECT, Word.SKIPPED, Word.ERROR

# Verdicts per patch; the first group makes the exit status non-zero.
NOT_FIXED = Word.NOT_FIXED            # installed, yet the probe still sees the defect
CATALOG_WRONG = Word.CATALOG_WRONG    # the defect shows on a release the manifest says is unaffected
UNPROTECTED = Word.UNPROTECTED        # needed, could not be installed (drift / failed), defect present; or
                                      # installed here but not in a plain program that meets the defect
PROBE_ERROR = Word.PROBE_ERROR        # the probe itself is broken
FIXED = Word.FIXED                    # defect without the patch, none with it
NOT_NEEDED = Word.NOT_NEEDED          # outside the range and no defect
NOT_REPRODUCED = Word.NOT_REPRODUCED  # installed, but the probe sees no defect without it either
SKIPPED_VERDICT = Word.SKIPPED        # the scenario cannot run on this release
OPEN = Word.OPEN                      # outside the range, the probe's path is wrong here for a reason on file in
                                      # patches/open-findings.json (another defect, not patched yet)
EXPOSED = Word.EXPOSED                # the user switched the patch off (or it is pending) and the defect is there
UNCHECKED = Word.UNCHECKED            # no defect seen, patch not installed for a reason other than the range
FAILING = DOCTOR_FAILING
# Verdicts the short report lists (besides the failing ones): the user switched a needed patch off, or the probe
# and the range disagree. Fixed, not-needed and skipped patches are counted only (--verbose lists them).
ATTENTION = (EXPOSED, NOT_REPRODUCED, UNCHECKED)

_QUIET_BARS: contextvars.ContextVar[bool] = contextvars.ContextVar("hf_genfix_doctor_quiet_bars", default=False)
_BARS_LOCK = reset_in_child(threading.Lock())  # a forked child starts with it free
_BARS: dict[str, Any] = {"open": 0, "hook": None, "previous": None}  # quiet_progress blocks open, process-wide


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
          version: str | None, affected: str, open_record: dict | None = None) -> tuple[str, str]:
    """(verdict, message) from the patch's state and the probe runs. ``open_record``: the open finding that covers
    the patch's sweep claims on this release, if one does (a defect outside the range is then that one)."""
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
        if in_range is False and open_record is not None:
            return OPEN, (f"outside {affected!r}, and this path is on file as wrong on transformers {version} for "
                          f"another reason (patches/open-findings.json): {open_record['what']} -- the probe: "
                          f"{without.message}")
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
        probe = catalog.probe(manifest)
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
    from .catalog import open_finding_for_claims

    open_record = open_finding_for_claims(manifest.sweep, version) if inside is False else None
    verdict, message = judge(state, inside, without, with_patch, version, manifest.affected, open_record)
    return PatchReport(
        id=manifest.id, state=state, reason=status.reason, affected=manifest.affected, in_range=inside,
        summary=manifest.summary, verdict=verdict, message=message, without=without, with_patch=with_patch,
        seconds=time.perf_counter() - start, targets=targets,
    )


# -- the whole run ----------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _one_torch_thread() -> Iterator[None]:
    """The probes on one torch thread while the plain-program interpreters run beside them (the CLI only: this
    process is ours). Tiny models gain nothing from a second thread, and two OpenMP threads that wait for each
    other while those interpreters hold the cores made each probe up to 30 times slower: 17.5 s for doctor on
    5.24.0 on a quiet 2-core machine, of which 4.3 s for one probe that takes 0.14 s alone."""
    try:
        import torch
    except ImportError:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def import_targets(registry: Any = None) -> str | None:
    """Import every target module of the patches (of ``registry``, the process-wide one by default) so that each
    patch is decided now; returns the transformers version (None when transformers is not installed). A program
    that wants every patch for its release in place before it runs anything calls this once after the import."""
    import hf_genfix

    from ._registry import transformers_version

    if registry is None:
        registry = hf_genfix._activation.registry()
    if registry is not hf_genfix._activation.registry() and transformers_version() is None:
        return None
    try:
        importlib.import_module("transformers")  # the version a registry gates on is the imported one
    except ImportError:
        return None
    for manifest in registry.manifests():
        for module in manifest.target_modules:
            with contextlib.suppress(ImportError):
                importlib.import_module(module)  # a module this release lacks: the patch stays pending or drifts
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


class UsageError(ValueError):
    """A command line doctor cannot act on (exit status 2)."""


# What the doctor's findings mean on a release outside the verified range.
UNVERIFIED_FINDINGS = ("the checks below ran anyway, but on a release nobody verified a broken probe or a patch that "
                       "could not be installed can be this release's API rather than a defect; each patch is still "
                       "installed only where its affected range covers the release")


@contextlib.contextmanager
def quiet_progress() -> Iterator[None]:
    """No transformers progress bars ("Loading weights", "Writing model shards": the probes save and load tiny
    models) from the calling thread or task inside the block; other threads keep theirs.

    transformers' own switch, ``disable_progress_bar()``, is one global flag every thread reads, so instead a
    factory hook (``transformers.utils.logging._tqdm_hook``, 5.x: the releases whose loading shows bars) hands out
    the silent bar in this context only and defers to the hook it found everywhere else. The hook is put in by the
    first open block and taken out by the last (unless someone replaced it meanwhile)."""
    try:
        from transformers.utils import logging as tlog
    except Exception:  # noqa: BLE001 - no transformers, no bars
        tlog = None
    if tlog is None:
        yield
        return
    if not hasattr(tlog, "_tqdm_hook") or not hasattr(tlog, "EmptyTqdm"):
        # Releases without the hook (4.x, 5.0 - 5.x before it): only the global switch exists. doctor owns its
        # process, so it turns the bars off for the block (the first open block) and back on after the last.
        with _BARS_LOCK:
            if _BARS["open"] == 0:
                _BARS["previous"] = tlog.is_progress_bar_enabled()
                tlog.disable_progress_bar()
            _BARS["open"] += 1
        try:
            yield
        finally:
            with _BARS_LOCK:
                _BARS["open"] -= 1
                if _BARS["open"] == 0 and _BARS["previous"]:
                    tlog.enable_progress_bar()
        return
    with _BARS_LOCK:
        if _BARS["open"] == 0:
            previous = tlog._tqdm_hook

            def hook(factory: Any, args: tuple, kwargs: dict) -> Any:
                if _QUIET_BARS.get():
                    return tlog.EmptyTqdm(*args, **kwargs)
                return previous(factory, args, kwargs) if previous is not None else factory(*args, **kwargs)

            _BARS["hook"], _BARS["previous"] = hook, previous
            tlog._tqdm_hook = hook
        _BARS["open"] += 1
    token = _QUIET_BARS.set(True)
    try:
        yield
    finally:
        _QUIET_BARS.reset(token)
        with _BARS_LOCK:
            _BARS["open"] -= 1
            if _BARS["open"] == 0 and tlog._tqdm_hook is _BARS["hook"]:
                tlog._tqdm_hook = _BARS["previous"]


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
        registry = hf_genfix._activation.registry()
    if plain_states is None and registry is hf_genfix._activation.registry():
        from .oracles.user_programs import PlainRun

        plain_states = lambda patches: PlainRun(patches).results  # noqa: E731
    start = time.perf_counter()
    version = import_targets(registry)
    manifests = {m.id: m for m in registry.manifests()}
    problem = unknown_patches(only, registry)
    if problem:
        raise UsageError(problem)
    from .catalog import outside_verified, verified_range

    patches: list[PatchReport] = []
    if version is not None:
        statuses = [s for s in registry.status() if not only or s.id in only]
        installed = [(s.id, s.family) for s in statuses if s.state in INSTALLED]
        # Started before the probes, read after: the fresh interpreters run while the probes do.
        collect = plain_states(installed) if plain_states is not None and installed else None
        with quiet_logs(), quiet_progress():
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
        "verified_range": list(verified_range() or ()),
        "unsupported": outside_verified(version, UNVERIFIED_FINDINGS) if version else None,
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


class _Parser(argparse.ArgumentParser):
    """Every usage error in one line on stderr, exit status 2 (argparse prints the whole usage first)."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def main(argv: Sequence[str] | None = None, registry: Any = None) -> int:
    from .oracles.precision import DTYPES  # what dtype_name accepts, for the --dtype help

    parser = _Parser(
        prog="hf-genfix doctor",
        description="Run every patch's probe on this install: does the defect reproduce without the patch, "
                    "does the patch fix it.",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON (every patch, both runs)")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="also print every patch: its state, what its probe saw without and with it, its verdict")
    parser.add_argument("--output", metavar="FILE",
                        help="also write the JSON report to FILE (its folder must exist; FILE is replaced whole "
                             "once the checks are done, never left half-written)")
    parser.add_argument("--patch", action="append", default=[], metavar="ID", help="check only these patches")
    parser.add_argument("--sweep", action="store_true",
                        help="also run the general oracles over every decoder-only, encoder-decoder and image-text "
                             "architecture of this release")
    parser.add_argument("--arch", action="append", default=[], metavar="MODEL_TYPE",
                        help="with --sweep: only these model types (repeatable)")
    parser.add_argument("--scenario", action="append", default=[], metavar="NAME",
                        help="with --sweep: only these scenarios (repeatable)")
    parser.add_argument("--sweep-budget", type=_seconds, default=None, metavar="SECONDS",
                        help="with --sweep: stop starting new architectures after this many seconds")
    parser.add_argument("--differential", action="store_true",
                        help="with --sweep: also run every scenario without hf_genfix and compare the outputs "
                             "(never worse than upstream; about twice the time)")
    parser.add_argument("--recall", action="store_true",
                        help="with --sweep: say how many of the defects the probes show on this release the sweep "
                             "finds by itself (K of N, each miss with why); runs the sweep --differential")
    parser.add_argument("--quick", action="store_true",
                        help="with --sweep: a fixed sample of the architectures and combinations (a couple of "
                             "minutes); the matrix run covers them all")
    parser.add_argument("--quiet", action="store_true", help="with --sweep: no progress lines on stderr")
    parser.add_argument("--dtype", default="float32", metavar="DTYPE",
                        help=f"build the probes' models in DTYPE: {', '.join(DTYPES)} (default float32); logits "
                             "are compared within that dtype's tolerance (docs/precision.md)")
    parser.add_argument("--device", default="cpu", metavar="DEVICE",
                        help="run the probes on DEVICE (default cpu; e.g. cuda, cuda:1)")
    args = parser.parse_args(list(argv or []))
    # Every argument is checked before any work (a probe, an import of the targets): a mistake costs one line and
    # exit status 2 at once, not minutes of probes and then a traceback.
    sweep_only = [flag for flag, given in (("--differential", args.differential), ("--quick", args.quick),
                                           ("--arch", args.arch), ("--scenario", args.scenario),
                                           ("--sweep-budget", args.sweep_budget is not None),
                                           ("--recall", args.recall)) if given]
    if sweep_only and not args.sweep:
        parser.error(f"{', '.join(sweep_only)} go{'es' if len(sweep_only) == 1 else ''} with --sweep")
    from .oracles.precision import dtype_name, precision

    try:
        dtype = dtype_name(args.dtype)
    except ValueError as exc:
        parser.error(f"--dtype: {exc}")
    problem = (output_problem(args.output) if args.output is not None else None) or unknown_patches(
        args.patch, registry)
    if problem:
        parser.error(problem)
    missing = missing_requirement(args.device)
    if missing:
        sys.stderr.write(f"hf-genfix doctor: {missing}\n")
        return EXIT_USAGE
    problem = sweep_problem(args.arch, args.scenario) if args.sweep else None
    if problem:
        parser.error(problem)
    with precision(dtype, args.device) as setting:
        try:
            return _main(args, registry, setting)
        except UsageError as exc:
            parser.error(str(exc))


def output_problem(path: str) -> str | None:
    """Why the report cannot be written to ``path`` (checked before any probe runs), or None.

    The report replaces ``path`` atomically (a file written beside it, then renamed), so its folder must exist
    and take a new file: doctor creates no folders (a typo would create them silently). An existing device or
    pipe (``/dev/stdout``) is written directly."""
    if not path:
        return "--output: no file named"
    target = Path(path)
    if target.is_dir():
        return f"--output {path}: is a folder; name a file"
    if target.exists() and not target.is_file():
        return None if os.access(target, os.W_OK) else f"--output {path}: cannot be written"
    folder = target.parent
    if not folder.is_dir():
        if folder.exists():
            return f"--output {path}: {folder} is not a folder"
        return f"--output {path}: the folder {folder} does not exist (doctor creates no folders)"
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        return f"--output {path}: cannot create a file in {folder} ({exc.strerror or exc})"
    os.close(fd)
    os.unlink(probe)
    return None


def write_report(report: dict[str, Any], path: str) -> None:
    """Write the JSON report to ``path`` atomically: a reader (or an interrupted run) sees the old file or the
    whole new one, never a truncated report."""
    from ._atomic import replace_with_text

    text = json.dumps(report, indent=2) + "\n"
    target = Path(path)
    if target.exists() and not target.is_file():  # a device or a pipe: nothing to replace
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    umask = os.umask(0)  # mkstemp makes the file 0600; a report is as readable as any file the user writes
    os.umask(umask)
    replace_with_text(target, text, mode=0o666 & ~umask)


def unknown_patches(only: Sequence[str], registry: Any = None) -> str | None:
    """The ``--patch`` ids no manifest of ``registry`` has (with the closest id), or None."""
    if not only:
        return None
    import hf_genfix

    ids = [m.id for m in (registry if registry is not None else hf_genfix._activation.registry()).manifests()]
    unknown = [p for p in only if p not in ids]
    if not unknown:
        return None
    hints = [f"{p} (did you mean {close[0]}?)" if close else p
             for p in unknown for close in [difflib.get_close_matches(p, ids, n=1)]]
    return f"--patch: no patch has the id {', '.join(hints)}; `hf-genfix list` prints every id"


def sweep_problem(archs: Sequence[str], scenarios: Sequence[str]) -> str | None:
    """The ``--arch`` / ``--scenario`` names the sweep does not know on this release, or None."""
    import importlib.util

    if importlib.util.find_spec("transformers") is None:
        return None
    from .oracles.sweep import SCENARIOS

    for name in scenarios:
        if name not in SCENARIOS:
            close = difflib.get_close_matches(name, list(SCENARIOS), n=1)
            return f"--scenario: the sweep has no scenario {name}" + (
                f" (did you mean {close[0]}?)" if close else f"; it has {', '.join(SCENARIOS)}")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    bad = [a for a in archs if a not in CONFIG_MAPPING_NAMES]
    if bad:  # the sweep's own kinds name their subjects too (remote-<family>, tokenizer-<layout>)
        from .oracles.sweep import kinds_of

        bad = [a for a in bad if a not in kinds_of()]
    if bad:
        return (f"--arch: transformers {_dist_version('transformers')} has no model type {', '.join(bad)} "
                "(a model type is config.json's model_type: llama, gpt2, ...)")
    return None


def missing_requirement(device: str = "cpu") -> str | None:
    """What the probes need and this install lacks, in one line with how to get it; None when nothing is missing
    (or transformers is absent: then there is nothing to check). Every probe builds a torch model: without torch
    or the device asked for, each would fail alike and blame itself."""
    import importlib.util

    if importlib.util.find_spec("transformers") is None:
        return None
    try:
        import torch
    except ImportError as exc:
        return (f"torch cannot be imported ({type(exc).__name__}: {exc}), and every probe builds a small model "
                "with it: install torch (`pip install torch`, or the build for your accelerator from "
                "https://pytorch.org/get-started/locally/) and run `hf-genfix doctor` again")
    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError, ValueError) as exc:
        return f"--device {device!r} is not a torch device ({exc})"
    if kind == "cpu":
        return None
    if kind == "cuda" and not torch.cuda.is_available():
        why = (f"this torch ({torch.__version__}) is built without CUDA" if torch.version.cuda is None
               else f"this torch ({torch.__version__}, CUDA {torch.version.cuda}) sees no CUDA device")
        return (f"--device {device}: {why}: install a CUDA build of torch (https://pytorch.org/get-started/locally/) "
                "on a machine with an NVIDIA GPU and driver, or leave --device out to run on the CPU")
    try:
        torch.zeros(1, device=device)
    except Exception as exc:  # noqa: BLE001 - whatever torch says about the device, said once
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return (f"--device {device}: this torch ({torch.__version__}) cannot use it ({first}): install a torch "
                "build for that device (https://pytorch.org/get-started/locally/) or leave --device out")
    return None


def known_defects(report: dict[str, Any]) -> list[str]:
    """The patches whose probe shows their defect on this release (the run without the patch saw it): what
    ``--recall`` asks the sweep to find by itself. Not a patch whose verdict is ``open``: outside its range, what its
    probe shows there is another defect on file, not the one the patch fixes."""
    return [p["id"] for p in report["patches"]
            if (p.get("without") or {}).get("outcome") == DEFECT and p.get("verdict") != OPEN]


def _main(args: argparse.Namespace, registry: Any, setting: Any) -> int:
    with _one_torch_thread():
        report = diagnose(registry, only=args.patch)
    report["dtype"], report["device"] = setting.dtype, setting.device
    exit_code = EXIT_OK if report["ok"] else EXIT_FAILING
    if args.sweep and report["transformers"] is not None:
        from .oracles import sweep as sweep_mod

        # Model code that prints (4.x CTRL and Reformer: "Warning: attention_mask is not a recognized input." on
        # every prepare_inputs_for_generation call) goes to stderr with the progress, not into the report.
        with quiet_logs(), quiet_progress(), contextlib.redirect_stdout(sys.stderr):
            report["sweep"] = sweep_mod.run_sweep(
                registry, archs=args.arch or None, scenarios=args.scenario or None, budget_s=args.sweep_budget,
                differential_all=args.differential, progress=None if args.quiet else sweep_mod.stderr_progress,
                quick=args.quick, recall=known_defects(report) if args.recall else None,
            )
        if sweep_mod.failed(report["sweep"]):
            exit_code = EXIT_FAILING
    failed_write = None
    if args.output is not None:
        try:
            write_report(report, args.output)
        except OSError as exc:  # checked before the probes; the disk can still fill up meanwhile
            failed_write = (f"hf-genfix doctor: --output {args.output}: the report could not be written "
                            f"({exc.strerror or exc}); the file is as it was\n")
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render_text(report, verbose=args.verbose))
    if failed_write:
        sys.stderr.write(failed_write)
        return EXIT_USAGE
    # Outside the verified range a failure is as likely the release's API as a defect: say which it is not.
    return EXIT_UNSUPPORTED if report.get("unsupported") else exit_code
