"""Running one env: transformers (and the shared torch) installed, doctor on it, the sweep and the suite on
the suite releases; every env through tox."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from .files import ENV_PREFIX, RESULTS, TOX_INI, VERSION
from .judging import defect_key
from .release_list import release_key, releases, split_env, suite_releases
from .rendering import report


def requirement(spec: str) -> str:
    """``tf-5.12.0``, ``5.12.0`` or ``tf-5.12.0-torch2.14.1`` -> ``transformers==5.12.0``; anything else (a path, a
    URL) is passed as is."""
    spec = split_env(spec)[0]
    return f"transformers=={spec}" if VERSION.match(spec) else spec


def install(spec: str, torch_dir: Path | None = None, torch_spec: str | None = None) -> int:
    """Into this python: the shared torch (see ``shared_torch``), then transformers for ``spec``. An env that names
    its torch (``tf-4.46.3-torch2.5.1``) gets that torch, whatever GENFIX_TORCH says."""
    named = split_env(spec)[1]
    if named is not None:
        torch_spec = f"torch=={named}"
    if torch_dir is not None:
        code = shared_torch(Path(torch_dir), torch_spec if torch_spec is not None else TORCH_DEFAULT)
        if code:
            return code
    req = requirement(max(releases(), key=release_key) if spec == "newest" else spec)
    print(f"matrix: pip install {req}", flush=True)
    return subprocess.call([sys.executable, "-m", "pip", "install", "--quiet", req])


TORCH_DEFAULT = "torch==2.13.0"


def shared_torch(root: Path, torch_spec: str) -> int:
    """One torch for every env: installed once with ``pip install --target`` and linked in by a .pth file.

    A CPU torch is ~900 MB installed and a minute to unpack; thirteen copies would cost a quarter of an hour and
    12 GB. ``torch_spec`` is any pip requirement (GENFIX_TORCH); empty means "do not install torch here" (use
    one the env already has). Parallel envs (``tox p``) wait on a lock while the first one installs.
    """
    import sysconfig

    if not torch_spec.strip():
        return 0
    slug = re.sub(r"[^A-Za-z0-9.]+", "_", torch_spec.strip())
    target = root / slug
    done = target / ".genfix-complete"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{slug}.lock", "w") as lock:
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - no flock on Windows: run the envs one at a time there
            pass
        if not done.exists():
            print(f"matrix: pip install --target {target} {torch_spec} (once for all envs)", flush=True)
            code = subprocess.call([sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target),
                                    torch_spec])
            if code:
                return code
            done.write_text(torch_spec + "\n")
    pth = Path(sysconfig.get_paths()["purelib"]) / "genfix_shared_torch.pth"
    pth.write_text(str(target) + "\n")
    return 0


def doctor(env_name: str, results: Path = RESULTS, tox_ini: Path = TOX_INI) -> int:
    """``hf-genfix doctor`` for a matrix env, its JSON saved as tox-results/<env>.json.

    Every suite release (``suite_releases``: the oldest, [matrix] suite and the newest) adds ``--sweep
    --differential``: every decoder-only architecture through every scenario, with and without hf_genfix. Its
    results go into the same report (``sweep``), so that the matrix records them and the upgrade check reports only
    new unknown defects against the newest. Exit status 1 when a patch fails (the catalog) and, on a suite release,
    when the sweep fails: an unknown defect, a scenario hf_genfix makes worse than upstream, or a catalog range the
    sweep shows wrong (what ``hf-genfix doctor --sweep`` exits 1 for).
    """
    out = Path(results) / f"{env_name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)  # doctor creates no folders (a typo in --output is an error)
    swept = split_env(env_name)[0] in suite_releases(tox_ini)
    cmd = [sys.executable, "-m", "hf_genfix", "doctor", "--output", str(out)]
    code = subprocess.call(cmd + (sweep_args() if swept else []))
    if not out.exists():
        return code or 1
    report = json.loads(out.read_text(encoding="utf-8"))
    if not report["ok"]:
        return 1
    if swept:
        failing = sweep_failures(report.get("sweep"))
        if failing or code:
            print(f"matrix: {env_name}: hf-genfix doctor {' '.join(sweep_args())} FAILED (exit {code}): "
                  + ("; ".join(failing) or "no sweep in the report"))
            return 1
    return 0


# What a suite release's doctor adds (docs/matrix.md: the sweep).
SWEEP_ARGS = ["--sweep", "--differential"]


def sweep_args() -> list[str]:
    """``SWEEP_ARGS``, and ``--jobs N`` where ``GENFIX_SWEEP_JOBS=N`` asks for the architectures in N worker
    processes (``tox -e tf-5.25.0`` alone on a machine of N cores), ``--sweep-budget S`` where
    ``GENFIX_SWEEP_BUDGET=S`` stops starting architectures after S seconds (.ci/run: CI's 40 minutes; the report
    lists the ones not reached). doctor checks both values."""
    jobs = os.environ.get("GENFIX_SWEEP_JOBS", "").strip()
    budget = os.environ.get("GENFIX_SWEEP_BUDGET", "").strip()
    return SWEEP_ARGS + (["--jobs", jobs] if jobs else []) + (["--sweep-budget", budget] if budget else [])


def sweep_failures(sweep: Mapping[str, Any] | None) -> list[str]:
    """One line per finding that makes ``doctor --sweep`` exit 1 (hf_genfix.oracles.sweep.failed): unknown defects
    and worse-than-upstream scenarios (the ``unknown`` list), catalog ranges the sweep shows wrong."""
    if sweep is None:
        return ["the report has no sweep"]
    lines = [f"{f.get('verdict', 'unknown')}: {defect_key(f)}" for f in sweep.get("unknown", [])]
    lines += [f"catalog wrong: {defect_key(f)}" for f in sweep.get("known", []) if f.get("catalog_wrong")]
    return lines


def run(env_name: str, pytest_args: Sequence[str] = (), tox_ini: Path = TOX_INI) -> int:
    """One tox env: ``doctor`` (every probe, both sides of each patch) on every release; ``doctor --sweep
    --differential`` and the test suite only on the suite releases (``GENFIX_SUITE=all`` runs the tests
    everywhere, ``GENFIX_SUITE_TESTS=0`` nowhere), which keeps the whole matrix within its budget."""
    import time

    start = time.monotonic()
    code = doctor(env_name, tox_ini=tox_ini)
    release = split_env(env_name)[0]
    tests = os.environ.get("GENFIX_SUITE_TESTS") != "0"
    if not tests:
        # .ci/run: the sweep only. The test suite on three releases (slow set included: 31 min for 5.24.0 alone on
        # 2 busy cores) took CI to 87 minutes; CI runs the README's tests once and the cross-release suite is tox's.
        print(f"matrix: {env_name}: GENFIX_SUITE_TESTS=0, the test suite is not run here")
    elif os.environ.get("GENFIX_SUITE") == "all" or release in suite_releases(tox_ini):
        # The slow tests too; the engine tests (tests/workers: launch mechanics, minutes) run once, in .ci/run.
        code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", "not workers", *pytest_args]) or code
    else:
        print(f"matrix: {env_name}: doctor only (the test suite runs on {', '.join(suite_releases(tox_ini))})")
    suite = release in suite_releases(tox_ini)
    print(f"matrix: {env_name} took {time.monotonic() - start:.0f} s "
          f"(doctor{' --sweep --differential' if suite else ''}{' + tests' if suite and tests else ''})")
    return code


def run_all(parallel: int = 2, tox_ini: Path = TOX_INI) -> int:
    """Every env with ``tox p`` (cold or warm), then the report; prints the total wall time."""
    import time

    start = time.monotonic()
    # Longest first (the suite releases add the sweep and the tests, the newest the longest sweep): in release order the
    # newest env would start last and run alone for five minutes while the other core idles.
    listed = releases(tox_ini)
    suite, newest = suite_releases(tox_ini), max(listed, key=release_key)
    ordered = sorted(listed, key=lambda v: (v != newest, v not in suite, release_key(v)))
    envs = ",".join(ENV_PREFIX + v for v in ordered)
    code = subprocess.call([sys.executable, "-m", "tox", "p", "-p", str(parallel), "-e", envs])
    rep = report()
    minutes = (time.monotonic() - start) / 60
    print(f"matrix: {len(releases(tox_ini))} releases in {minutes:.1f} min with {parallel} in parallel "
          f"(budget 30 min on 2 cores)")
    return code or rep
