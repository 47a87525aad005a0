"""The watch of new transformers releases (.github/workflows/watch.yml, weekly and on demand): judge the newest
release on the package index, and a pre-release newer than it, before users move to them.

    python scripts/watch_releases.py versions [--json]      # the releases to judge, newest release first
    python scripts/watch_releases.py run [--version V ...] [--install] [--output DIR] [-- DOCTOR ARGS]

``run`` installs each release with ``--install`` (else judges the installed transformers, named or not), runs
``hf-genfix doctor --sweep --differential --recall`` on it with this interpreter, and prints the itemized
findings: the patches doctor fails (a fix that no longer fixes, a catalog range the probe shows wrong), the sweep's
failures (an unknown defect, a scenario worse than upstream, a range the sweep shows wrong), then, for a look
and not failing, the suspect scenarios (off by more than rounding, within tolerance) and the known defects the
sweep does not find by itself (recall). Exit status 1 when anything fails, 0 otherwise: doctor's own exit
status 3 (a release newer than the verified range: every new release) is not a failure here, since judging such
a release is the point. DOCTOR ARGS go to doctor as they are (``-- --quick`` for a sample on a small machine).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

DOCTOR_ARGS = ["--sweep", "--differential", "--recall", "--quiet"]


def _version(text: str) -> Any:
    try:
        from packaging.version import Version
    except ImportError:  # a bare interpreter: pip vendors it
        from pip._vendor.packaging.version import Version  # type: ignore[no-redef]
    return Version(text)


def index_versions(package: str = "transformers") -> list[str]:
    """Every version of ``package`` on the package index pip is configured for, pre-releases included."""
    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", package, "--pre"], check=True,
                         capture_output=True, text=True).stdout
    match = re.search(r"^Available versions: (.+)$", out, re.MULTILINE)
    if match is None:
        raise SystemExit(f"watch: `pip index versions {package} --pre` listed no versions:\n{out}")
    return [v.strip() for v in match.group(1).split(",") if v.strip()]


def choose(versions: Iterable[str]) -> list[str]:
    """The newest release, and the newest pre-release (rc, beta, dev) when it is newer than that release."""
    parsed = sorted((_version(v) for v in versions), reverse=True)
    final = next((v for v in parsed if not (v.is_prerelease or v.is_devrelease)), None)
    pre = next((v for v in parsed if v.is_prerelease or v.is_devrelease), None)
    chosen = [v for v in (final, pre) if v is not None and (v is final or final is None or v > final)]
    return [str(v) for v in chosen]


def findings(report: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(failing lines, lines for a look) of one doctor report (its JSON)."""
    failing = [f"patch {p['id']} {p['verdict']}: {p['message']}" for p in report.get("patches", []) if p.get("failing")]
    sweep = report.get("sweep")
    if sweep is None:
        return failing + ["the report has no sweep"], []
    for f in sweep.get("unknown", []):
        failing.append(f"{f.get('verdict', 'unknown')}: {_where(f)}: {f.get('message', '')} [{f.get('cause', '')}]")
    failing += [f"catalog wrong: {_where(f)}: {f.get('cause', '')}" for f in sweep.get("known", [])
                if f.get("catalog_wrong")]
    look = [f"suspect: {_where(f)}: {f.get('cause', '')}" for f in sweep.get("suspect", [])]
    recall = sweep.get("recall")
    if recall:
        look.append(f"recall: {len(recall['found'])} of {len(recall['known'])} known defects found by the sweep")
        look += [f"recall missed {pid}: {why}" for pid, why in recall["missed"].items()]
    return failing, look


def _where(f: Mapping[str, Any]) -> str:
    step = f" step {f['step']}" if f.get("step") is not None else ""
    diff = f.get("max_logit_diff")
    return f"{f.get('arch')} / {f.get('scenario')}{step}" + (f" ({diff:.3g})" if isinstance(diff, (int, float)) else "")


def installed_transformers() -> str | None:
    out = subprocess.run([sys.executable, "-c", "import transformers; print(transformers.__version__)"],
                         capture_output=True, text=True)
    return out.stdout.strip() or None


def judge(version: str | None, install: bool, output: Path, doctor_args: Sequence[str]) -> bool:
    """Install ``version`` (with ``install``), run doctor on it and print its findings; True when nothing fails."""
    if install and version:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", f"transformers=={version}"], check=True)
    have = installed_transformers()
    if version and have != version:
        raise SystemExit(f"watch: transformers {have} is installed, not {version} (pass --install to install it)")
    output.mkdir(parents=True, exist_ok=True)
    path = output / f"watch-{have}.json"
    start = time.perf_counter()
    status = subprocess.run([sys.executable, "-m", "hf_genfix", "doctor", *DOCTOR_ARGS, *doctor_args,
                             "--output", str(path)]).returncode
    seconds = time.perf_counter() - start
    if not path.exists():
        print(f"watch: transformers {have}: doctor wrote no report (exit status {status})")
        return False
    failing, look = findings(json.loads(path.read_text()))
    print(f"watch: transformers {have}: doctor exit status {status} in {seconds:.0f} s; "
          f"{len(failing)} failing finding(s)")
    for line in failing:
        print(f"  FAIL {line}")
    for line in look:
        print(f"  note {line}")
    return not failing and status in (0, 3)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        argv, extra = argv[: argv.index("--")], argv[argv.index("--") + 1:]
    parser = argparse.ArgumentParser(prog="watch_releases.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("versions", help="the releases to judge: the newest, and a newer pre-release")
    listing.add_argument("--json", action="store_true", help="one JSON list (for a workflow matrix)")
    running = sub.add_parser("run", help="judge releases with hf-genfix doctor --sweep --differential --recall")
    running.add_argument("--version", action="append", default=[], metavar="V",
                         help="a release to judge (repeatable); default: the installed one")
    running.add_argument("--install", action="store_true", help="pip install each --version first")
    running.add_argument("--output", type=Path, default=None, metavar="DIR",
                         help="where the doctor reports go (watch-<version>.json; default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.command == "versions":
        chosen = choose(index_versions())
        print(json.dumps(chosen) if args.json else "\n".join(chosen))
        return 0
    output = args.output or Path(tempfile.mkdtemp(prefix="hf-genfix-watch-"))
    results = [judge(v, args.install, output, extra) for v in (args.version or [None])]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
