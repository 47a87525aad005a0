"""``hf-genfix upgrade-check X.Y.Z``: what changes for your models if you move to transformers X.Y.Z.

1. Builds (once, then cached) an isolated environment with transformers X.Y.Z, the torch you run now (linked in
   with a .pth file, never downloaded again) and this hf_genfix (linked from where it is installed), under
   ``~/.cache/hf_genfix/envs/`` (``--cache-dir``; ``XDG_CACHE_HOME`` is honoured). ``uv`` builds it where it is
   on PATH, else ``venv`` + ``pip``. Your own packages (installed from a local folder, editable or not) and
   ``PYTHONPATH`` reach it on every run, without flags.
2. Runs ``hf-genfix doctor`` on the release you run and on X.Y.Z and says per patch what changes: applies now,
   applies there, upstream fixed there, still present, or the range must grow.
3. ``--model PATH`` (repeatable): runs the generation scenarios of ``hf_genfix.upgrade_scenarios`` on both
   releases, with and without hf_genfix, and compares the tokens (and the scores) per scenario; through the
   folder's own tokenizer (and chat template) too, where it has one.
4. ``-- pytest ARGS``: runs your test suite on both releases with hf_genfix active and lists the tests that
   pass now and fail on X.Y.Z, with their failure lines and the command that reruns each there.

The summary comes first and fits a screen; ``--verbose`` adds every patch and scenario. ``--json`` prints the
whole result for CI. Every argument is checked before any work. Exit status: 0 nothing unexplained changed and
there was evidence; 1 something did (a difference no patch accounts for, a test regression, a patch that no
longer works, a range to change) or nothing could be compared (no scenario ran on either release, no test ran);
2 a usage error or an environment that cannot be built.
"""

# The parts, one job each: ``arguments`` (the command line, checked before any work), ``environment`` (the candidate
# release's environment, built once), ``cache`` (the cached files and locks), ``running`` (doctor, the scenario
# runner and your tests in each release's interpreter), ``judging`` (what changed and whether it is explained: the
# verdict) and ``rendering`` (the text report). This module holds the command: ``main`` and ``check``.

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Sequence

from .. import _child
from . import arguments, common, environment, judging, rendering, running
from .common import EnvError, UsageError

__all__ = ["EnvError", "UsageError", "check", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args, pytest_args = arguments.parse_args(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        if str(exc):
            sys.stderr.write(f"hf-genfix upgrade-check: {exc}\n")
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    try:
        result = check(args.version, models=args.model,
                       trust_remote_code=args.trust_remote_code, pytest_args=pytest_args, sweep=args.sweep,
                       cache=Path(args.cache_dir), rebuild=args.rebuild, links=args.link,
                       jobs=args.jobs, pytest_cwd_on_path=args.pytest_cwd_on_path)
    except (UsageError, EnvError) as exc:
        sys.stderr.write(f"hf-genfix upgrade-check: {exc}\n")
        return 2
    except OSError as exc:  # the cache folder became unwritable, the disk is full: one line, not a traceback
        sys.stderr.write(f"hf-genfix upgrade-check: {exc}\n")
        return 2
    if args.json:
        json.dump(result, sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    else:
        print(rendering.render(result, args.verbose))
    summary = result["summary"]
    return 1 if summary["unsafe"] or summary["no_evidence"] else 0


def check(version: str, models: Sequence[str] = (), trust_remote_code: bool = False,
          pytest_args: Sequence[str] | None = None, sweep: bool = False, cache: Path | None = None,
          rebuild: bool = False, say: Callable[[str], None] = common.progress, links: Sequence[str] = (),
          jobs: int = 2, pytest_cwd_on_path: bool = False) -> dict[str, Any]:
    """The whole check (see the module docstring); returns what ``--json`` prints."""
    from importlib import metadata

    import hf_genfix

    from ..upgrade_scenarios import SCENARIOS

    try:
        current = metadata.version("transformers")
    except metadata.PackageNotFoundError:
        raise UsageError("transformers is not installed here: nothing to compare against") from None
    start = time.monotonic()
    root = cache or environment.cache_root()
    if rebuild or not environment.env_ready(environment.env_path(version, root)):
        arguments.check_on_index(version)  # the one look-up, before minutes of building
    python = str(environment.build_env(version, root, rebuild, say))
    manifests = hf_genfix._activation.registry().manifests()
    families = {m.id: m.family for m in manifests}
    fixed = {m.id: m.fixed_versions for m in manifests}
    extra = ["--sweep", "--differential", "--quiet"] if sweep else []
    if links:
        environment.link_distributions(links, Path(python).parent.parent / "hf-genfix-links")
    if models or pytest_args is not None:
        mine = environment.link_user_packages(Path(python))
        if mine:
            say(f"your packages, linked into the environment of {version}: {', '.join(mine)}")
    reports = root / "doctor-reports"
    here_key = f"{environment.env_key(current, metadata.version('torch'))}-{running.installed_digest(sys.executable)}"
    there_key = f"{Path(python).parent.parent.name}-{running.installed_digest(python)}"
    tag = f"{running.fingerprint()}{'-sweep' if sweep else ''}.json"
    results = root / "scenario-results"
    if rebuild:
        for stale in [*reports.glob(f"*-{tag}"), *results.glob("*.json")]:
            stale.unlink()
    scenario_tag = hashlib.sha256(f"{running.fingerprint(True)}|{os.environ.get('PYTHONPATH', '')}|{trust_remote_code}"
                                  .encode()).hexdigest()[:12]
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    with tempfile.TemporaryDirectory(prefix="hf-genfix-upgrade-") as tmp, pool:
        work = Path(tmp)
        say(f"doctor on transformers {current} (the release you run) and on {version}"
            + (" (reports of an earlier run are reused)" if (reports / f"{here_key}-{tag}").exists() else ""))
        now_f = pool.submit(running.run_doctor, sys.executable, work / "now.json", extra, reports / f"{here_key}-{tag}", say)
        there_f = pool.submit(running.run_doctor, python, work / "there.json", extra, reports / f"{there_key}-{tag}", say)
        now, there = now_f.result(), there_f.result()
        result: dict[str, Any] = {"from": current, "to": there.get("transformers") or version,
                                  "torch": now.get("torch"), "environment": str(Path(python).parent.parent),
                                  "patches": judging.compare_patches(now, there, fixed), "models": None, "tests": None}
        # The matrix judged each release with the torch versions in patches/judged-torch.json (docs/matrix.md, the
        # torch axis); a probe's verdict can change with torch, so say when the user's is none of them.
        from ..catalog import torch_not_judged

        result["torch_not_judged"] = torch_not_judged(result["to"], now.get("torch"))
        if sweep:
            new_unknown = judging.sweep_unknown(there) - judging.sweep_unknown(now)
            result["sweep_new_unknown"] = sorted(new_unknown)
            for key in sorted(new_unknown):
                result["patches"].append({"id": f"sweep: {key}", "change": "new defect no patch covers",
                                          "applies_now": False, "applies_there": False, "unexplained": True,
                                          "notes": []})
        used: dict[str, int] = {}
        tokenizers: dict[str, Any] = {}
        if models:
            runs: dict[str, dict[str, Any]] = {}
            for i, model in enumerate(models):
                digest = running.model_digest(model)
                say(f"model {model}: {len(SCENARIOS)} scenarios (and the tokenizer's, if it has one) on {current} "
                    f"and {version}, with and without hf_genfix")
                futures = {}
                for label, py, key in (("now", sys.executable, here_key), ("there", python, there_key)):
                    for genfix in (True, False):
                        run = f"{label}-{'on' if genfix else 'off'}"
                        name = hashlib.sha256(f"{key}|{_child.absolute(model)}|{digest}|{scenario_tag}|{genfix}"
                                              .encode()).hexdigest()[:20]
                        futures[run] = pool.submit(running.run_scenarios, py, model, work / f"m{i}-{run}.json", genfix,
                                                   trust_remote_code, results / f"{name}.json", say)
                runs[model] = {run: f.result() for run, f in futures.items()}
                for pid, n in judging.patch_calls(runs[model]["there-on"]).items():
                    used[pid] = used.get(pid, 0) + n
                tok = judging.tokenizer_facts(runs[model])
                if tok is not None:
                    tokenizers[model] = tok
            result["models"] = judging.compare_models(runs, families)
            result["model_errors"] = {m: {k: r["error"] for k, r in v.items() if "error" in r}
                                      for m, v in runs.items()}
            result["tokenizers"] = tokenizers
        if pytest_args is not None:
            say(f"your tests (pytest {' '.join(pytest_args)}) on transformers {current} and {version}")
            now_t = pool.submit(running.run_pytest, sys.executable, pytest_args, work / "now-tests.json",
                                pytest_cwd_on_path)
            there_t = pool.submit(running.run_pytest, python, pytest_args, work / "there-tests.json", pytest_cwd_on_path)
            tests_now, tests_there = now_t.result(), there_t.result()
            for pid, n in tests_there["patch_calls"].items():
                used[pid] = used.get(pid, 0) + n
            ids = judging.regressions(tests_now["outcomes"], tests_there["outcomes"])
            result["tests"] = {"now": tests_now["outcomes"], "there": tests_there["outcomes"],
                               "regressions": judging.explain_regressions(ids, tests_there, python, pytest_cwd_on_path),
                               "exit_now": tests_now["exit"], "exit_there": tests_there["exit"],
                               "output_now": tests_now["output_tail"],
                               "patch_calls_now": tests_now["patch_calls"],
                               "patch_calls_there": tests_there["patch_calls"]}
    result["summary"] = judging.summarize(result["to"], current, result["patches"], result["models"], result["tests"],
                                  used, tokenizers)
    if result.get("torch_not_judged"):
        result["summary"]["lines"].insert(1, result["torch_not_judged"])
    result["seconds"] = round(time.monotonic() - start, 1)
    result["load_average"] = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    say(f"done in {result['seconds']:.0f} s (load average {result['load_average']})")
    return result
