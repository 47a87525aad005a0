"""The command line of ``hf-genfix upgrade-check``: every argument is checked before any work."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from .. import _child
from .common import UsageError
from .environment import cache_root


def check_version(version: str) -> str:
    """``version`` as a release number (``5.24.0``, ``5.0.0rc1``); anything else is a usage error."""
    from packaging.version import InvalidVersion, Version

    try:
        Version(version)
    except InvalidVersion:
        raise UsageError(f"{version!r} is not a transformers release number (e.g. 5.24.0)") from None
    if not re.fullmatch(r"\d+(\.\d+)*([a-z]+\d*)?(\.post\d+)?(\.dev\d+)?", version):
        raise UsageError(f"{version!r} is not a transformers release number (e.g. 5.24.0)")
    return version


def check_on_index(version: str, timeout: float = 60) -> None:
    """One look-up of transformers' releases on the index pip uses; a release that is not there, or an index
    that cannot be asked, is one line (not pip's list of every release, not minutes of building first)."""
    from packaging.version import Version

    wanted = Version(version)
    cmd = _child.argv(sys.executable, "-m", "pip", "index", "versions", "transformers", "--disable-pip-version-check",
                      "--retries", "1", "--timeout", "20", *(["--pre"] if wanted.is_prerelease else []))
    try:
        proc = _child.run(cmd, capture_output=True, text=True, timeout=timeout, env=_child.environ())
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"cannot look transformers {version} up on the package index ({exc})") from None
    found = re.search(r"Available versions: (.*)", proc.stdout)
    if "No module named pip" in proc.stderr:
        return  # this interpreter has no pip to ask: the build says so if the release does not exist
    if proc.returncode != 0 or not found:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("WARNING")]
        why = lines[-1].strip() if lines else f"pip exited {proc.returncode}"
        raise UsageError(f"cannot look transformers {version} up on the package index: {why}")
    versions = [v.strip() for v in found.group(1).split(",") if v.strip()]
    if wanted not in {Version(v) for v in versions}:
        raise UsageError(f"transformers {version} is not on the package index (the newest there is {versions[0]})")


def check_cache_dir(root: Path) -> Path:
    """A folder the environments can be written to, or one that can be made: its nearest existing ancestor is
    a writable folder. Checked without creating anything."""
    root = Path(_child.absolute(root))
    probe = root
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        what = "is not a folder" if probe == root else f"cannot be made: {probe} is not a folder"
        raise UsageError(f"--cache-dir {root} {what}")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"--cache-dir {root}: {probe} is not writable")
    return root


def check_model(path: str) -> None:
    p = Path(path)
    if not p.exists():
        raise UsageError(f"--model {path}: no such folder")
    if not p.is_dir():
        raise UsageError(f"--model {path}: not a folder (give a local checkpoint, as save_pretrained wrote it)")
    config = p / "config.json"
    if not config.is_file():
        raise UsageError(f"--model {path}: no config.json in it (give a checkpoint folder, as save_pretrained "
                         "wrote it)")
    try:
        if not isinstance(json.loads(config.read_text(encoding="utf-8")), dict):
            raise ValueError("not an object")
    except (OSError, ValueError) as exc:
        raise UsageError(f"--model {path}: config.json does not parse ({exc})") from None


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str] | None]:
    argv = list(argv)
    pytest_args, module_form = None, False
    if "--" in argv:
        cut = argv.index("--")
        argv, rest = argv[:cut], argv[cut + 1:]
        module_form = rest[:3] == ["python", "-m", "pytest"]
        if rest[:1] == ["pytest"]:
            rest = rest[1:]
        elif module_form:
            rest = rest[3:]
        else:
            raise UsageError("after --, give `pytest ARGS` (your test suite)")
        pytest_args = rest
    parser = argparse.ArgumentParser(prog="hf-genfix upgrade-check", description=sys.modules[__package__].__doc__,
                                     usage="%(prog)s X.Y.Z [--model PATH ...] [options] [-- pytest ARGS]",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("version", help="the transformers release to check, e.g. 5.24.0")
    parser.add_argument("--model", action="append", default=[], metavar="PATH",
                        help="a local checkpoint folder (as from_pretrained takes it); repeatable")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="load the --model checkpoints with trust_remote_code=True (runs their code)")
    parser.add_argument("--sweep", action="store_true",
                        help="also run doctor --sweep --differential on both releases (minutes)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    parser.add_argument("--verbose", action="store_true", help="every patch and every scenario, not only what needs a decision or what your models and tests "
                             "go through")
    parser.add_argument("--cache-dir", metavar="DIR", help="where the environments are cached")
    parser.add_argument("--rebuild", action="store_true",
                        help="build the environment again and run doctor and the scenarios again (no cached result)")
    parser.add_argument("--link", action="append", default=[], metavar="DIST",
                        help="also link this installed distribution (and what it needs) into the candidate "
                             "environment, e.g. a dependency of your tests; torch, pytest and its plugins, and your own "
                             "packages (installed from a local folder, editable or not) are always linked")
    parser.add_argument("--jobs", type=int, default=2, metavar="N",
                        help="run the two releases side by side (default 2; 1: one after the other)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        raise UsageError("") if exc.code else exc
    validate(args)
    # `pytest ARGS` (the script) does not put the current folder on the path; `python -m pytest ARGS` does: the
    # check runs your tests the way you wrote it.
    args.pytest_cwd_on_path = pytest_args is not None and module_form
    return args, pytest_args


def validate(args: argparse.Namespace) -> None:
    """Every argument, before any work (no environment, no probe, no look-up on the index: that one comes only
    when the environment must be built). Each problem is one line and exit 2."""
    from importlib import metadata

    check_version(args.version)
    args.cache_dir = str(check_cache_dir(cache_root(args.cache_dir)))
    for model in args.model:
        check_model(model)
    if args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: give 1 or more")
    for name in args.link:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise UsageError(f"--link {name}: not installed here (give an installed distribution)") from None
    for dist in ("torch", "transformers"):
        try:
            metadata.distribution(dist)
        except metadata.PackageNotFoundError:
            raise UsageError(f"{dist} is not installed in this interpreter: the upgrade check compares the "
                             f"release you run, with your torch") from None
