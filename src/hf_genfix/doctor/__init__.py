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

# The parts, one job each: ``arguments`` (the command line, checked before the first probe), ``probing`` (one
# probe run, by the probe contract), ``judging`` (one patch's verdict), ``run`` (the whole run: targets imported,
# every patch probed and judged, the plain programs beside them), ``report`` (what a report holds: outcomes,
# verdicts, exit statuses) and ``rendering`` (the text report). This module holds the command, and lends the names
# programs and tests use (``import_targets``, ``diagnose``, ``judge``, the verdict words).

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from . import arguments, run
from .arguments import UsageError, output_problem, sweep_problem
from .judging import judge
from .probing import run_probe
from .rendering import MEANING, render_text

# The outcome and verdict words, the exit statuses, ProbeRun and PatchReport: report.__all__.
from .report import *  # noqa: F403
from .report import DEFECT, EXIT_FAILING, EXIT_OK, EXIT_UNSUPPORTED, EXIT_USAGE, OPEN
from .report import __all__ as _REPORT_NAMES
from .run import diagnose, import_targets, quiet_logs, quiet_progress

__all__ = [
    *_REPORT_NAMES, "MEANING", "UsageError", "diagnose", "import_targets", "judge", "known_defects", "main",
    "output_problem", "quiet_logs", "quiet_progress", "render_text", "run_probe", "sweep_problem", "write_report",
]


def main(argv: Sequence[str] | None = None, registry: Any = None) -> int:
    parser = arguments.parser()
    args = parser.parse_args(list(argv or []))
    dtype = arguments.check(parser, args, registry)
    missing = arguments.missing_requirement(args.device)
    if missing:
        sys.stderr.write(f"hf-genfix doctor: {missing}\n")
        return EXIT_USAGE
    problem = arguments.sweep_problem(args.arch, args.scenario) if args.sweep else None
    if problem:
        parser.error(problem)
    from ..oracles.precision import precision

    with precision(dtype, args.device) as setting:
        try:
            return _main(args, registry, setting)
        except UsageError as exc:
            parser.error(str(exc))


def write_report(report: dict[str, Any], path: str) -> None:
    """Write the JSON report to ``path`` atomically: a reader (or an interrupted run) sees the old file or the
    whole new one, never a truncated report."""
    from .._atomic import replace_with_text

    text = json.dumps(report, indent=2) + "\n"
    target = Path(path)
    if target.exists() and not target.is_file():  # a device or a pipe: nothing to replace
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    umask = os.umask(0)  # mkstemp makes the file 0600; a report is as readable as any file the user writes
    os.umask(umask)
    replace_with_text(target, text, mode=0o666 & ~umask)


def known_defects(report: dict[str, Any]) -> list[str]:
    """The patches whose probe shows their defect on this release (the run without the patch saw it): what
    ``--recall`` asks the sweep to find by itself. Not a patch whose verdict is ``open``: outside its range, what its
    probe shows there is another defect on file, not the one the patch fixes."""
    return [p["id"] for p in report["patches"]
            if (p.get("without") or {}).get("outcome") == DEFECT and p.get("verdict") != OPEN]


def _main(args: argparse.Namespace, registry: Any, setting: Any) -> int:
    from ..oracles.precision import precision

    with run.one_torch_thread():
        report = run.diagnose(registry, only=args.patch)
    report["dtype"], report["device"] = setting.dtype, setting.device
    exit_code = EXIT_OK if report["ok"] else EXIT_FAILING
    if args.sweep and report["transformers"] is not None:
        from ..oracles import sweep as sweep_mod

        # Model code that prints (4.x CTRL and Reformer: "Warning: attention_mask is not a recognized input." on
        # every prepare_inputs_for_generation call) goes to stderr with the progress, not into the report.
        with quiet_logs(), quiet_progress(), contextlib.redirect_stdout(sys.stderr), \
                precision(attn=args.attn or "eager") as swept:
            report["sweep"] = sweep_mod.run_sweep(
                registry, archs=args.arch or None, scenarios=args.scenario or None, budget_s=args.sweep_budget,
                differential_all=args.differential, progress=None if args.quiet else sweep_mod.stderr_progress,
                quick=args.quick, recall=known_defects(report) if args.recall else None, jobs=args.jobs,
            )
        report["sweep"]["attn"] = swept.attn
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
