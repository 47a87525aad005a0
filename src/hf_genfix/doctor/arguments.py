"""The command line: every argument checked before the first probe, each problem one line and exit 2."""

from __future__ import annotations

import argparse
import difflib
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

from .report import EXIT_USAGE, dist_version


class UsageError(ValueError):
    """A command line doctor cannot act on (exit status 2)."""


class Parser(argparse.ArgumentParser):
    """Every usage error in one line on stderr, exit status 2 (argparse prints the whole usage first)."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def job_count(text: str) -> int:
    """``--jobs``: a whole number of worker processes, at least 1 (``0`` would be a guess at the cores; say it)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of worker processes (1 or more; "
                                         f"this machine has {os.cpu_count() or 1} cores)")
    return value


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


# The kernels a sweep can be run with: the CPU's two (flash attention needs a GPU and its own package).
ATTN_KERNELS = ("eager", "sdpa")


def sweep_problem(archs: Sequence[str], scenarios: Sequence[str]) -> str | None:
    """The ``--arch`` / ``--scenario`` names the sweep does not know on this release, or None."""
    import importlib.util

    if importlib.util.find_spec("transformers") is None:
        return None
    from ..oracles.sweep import SCENARIOS

    for name in scenarios:
        if name not in SCENARIOS:
            close = difflib.get_close_matches(name, list(SCENARIOS), n=1)
            return f"--scenario: the sweep has no scenario {name}" + (
                f" (did you mean {close[0]}?)" if close else f"; it has {', '.join(SCENARIOS)}")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    bad = [a for a in archs if a not in CONFIG_MAPPING_NAMES]
    if bad:  # the sweep's own kinds name their subjects too (remote-<family>, tokenizer-<layout>)
        from ..oracles.sweep import kinds_of

        bad = [a for a in bad if a not in kinds_of()]
    if bad:
        return (f"--arch: transformers {dist_version('transformers')} has no model type {', '.join(bad)} "
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


def parser() -> argparse.ArgumentParser:
    """The command line of ``hf-genfix doctor``."""
    from ..oracles.precision import (
        DTYPES,  # what dtype_name accepts, for the --dtype help
    )

    parser = Parser(
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
    parser.add_argument("--sweep-budget", type=positive_seconds, default=None, metavar="SECONDS",
                        help="with --sweep: stop starting new architectures after this many seconds")
    parser.add_argument("--jobs", type=job_count, default=1, metavar="N",
                        help="with --sweep: judge the architectures in N worker processes (default 1; one per core "
                             "is about N times faster; a --quick sweep runs in one)")
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
    parser.add_argument("--attn", choices=ATTN_KERNELS, default=None,
                        help="with --sweep: the attention kernel of the sweep's decoder-only models (default eager; "
                             "sdpa is what from_pretrained picks by default; a model without it runs eager, as "
                             "transformers falls back)")
    parser.add_argument("--dtype", default="float32", metavar="DTYPE",
                        help=f"build the probes' models in DTYPE: {', '.join(DTYPES)} (default float32); logits "
                             "are compared within that dtype's tolerance (docs/precision.md)")
    parser.add_argument("--device", default="cpu", metavar="DEVICE",
                        help="run the probes on DEVICE (default cpu; e.g. cuda, cuda:1)")
    return parser


def check(parser: argparse.ArgumentParser, args: argparse.Namespace, registry: Any = None) -> Any:
    """Every argument but the device and the sweep's names, before any work; the dtype asked for. A problem is
    ``parser.error`` (one line, exit status 2)."""
    # Every argument is checked before any work (a probe, an import of the targets): a mistake costs one line and
    # exit status 2 at once, not minutes of probes and then a traceback.
    sweep_only = [flag for flag, given in (("--differential", args.differential), ("--quick", args.quick),
                                           ("--arch", args.arch), ("--scenario", args.scenario),
                                           ("--sweep-budget", args.sweep_budget is not None),
                                           ("--recall", args.recall), ("--attn", args.attn is not None),
                                           ("--jobs", args.jobs != 1))
                  if given]
    if sweep_only and not args.sweep:
        parser.error(f"{', '.join(sweep_only)} go{'es' if len(sweep_only) == 1 else ''} with --sweep")
    from ..oracles.precision import dtype_name

    try:
        dtype = dtype_name(args.dtype)
    except ValueError as exc:
        parser.error(f"--dtype: {exc}")
    problem = (output_problem(args.output) if args.output is not None else None) or unknown_patches(
        args.patch, registry)
    if problem:
        parser.error(problem)
    return dtype
