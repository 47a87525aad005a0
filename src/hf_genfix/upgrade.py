"""``hf-genfix upgrade-check X.Y.Z``: what changes for your models if you move to transformers X.Y.Z.

1. Builds (once, then cached) an isolated environment with transformers X.Y.Z, the torch you run now (linked in
   with a .pth file, never downloaded again) and this hf_genfix (linked from where it is installed), under
   ``~/.cache/hf_genfix/envs/`` (``--cache-dir``; ``XDG_CACHE_HOME`` is honoured). ``uv`` builds it where it is
   on PATH, else ``venv`` + ``pip``.
2. Runs ``hf-genfix doctor`` on the release you run and on X.Y.Z and says per patch what changes: applies now,
   applies there, upstream fixed there, still present, or the range must grow.
3. ``--model PATH`` (repeatable): runs the generation scenarios of ``hf_genfix.upgrade_scenarios`` on both
   releases, with and without hf_genfix, and compares the tokens (and the scores) per scenario.
4. ``-- pytest ARGS``: runs your test suite on both releases with hf_genfix active and lists the tests that
   pass now and fail on X.Y.Z.

The summary comes first; ``--verbose`` adds what is not a decision (a target's signature drifted but the patch
still works). ``--json`` prints the whole result for CI. Exit status: 0 nothing unexplained changed; 1 something
did (a difference no patch accounts for, a test regression, a patch that no longer works, a range to change);
2 a usage error or an environment that cannot be built.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

INSTALLED = ("applied", "forced")
FAILING = ("not-fixed", "catalog-wrong", "unprotected", "probe-error")
LOGIT_TOL = 1e-4  # float32 scores that differ by less are the same computation reordered


def progress(message: str) -> None:
    sys.stderr.write(f"upgrade-check: {message}\n")
    sys.stderr.flush()


# -- the environment --------------------------------------------------------------------------------------------
def cache_root(given: str | None = None) -> Path:
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hf_genfix" / "envs"


def _package_roots() -> tuple[Path, Path | None]:
    """Where this hf_genfix is: (the ``hf_genfix`` package directory, the ``hf_genfix_pytest`` one or None)."""
    import hf_genfix

    package = Path(hf_genfix.__file__).resolve().parent
    try:
        import hf_genfix_pytest

        plugin: Path | None = Path(hf_genfix_pytest.__file__).resolve().parent
        if plugin.name != "hf_genfix_pytest":  # a single-file module
            plugin = Path(hf_genfix_pytest.__file__).resolve()
    except ImportError:
        plugin = None
    return package, plugin


def env_key(version: str, torch_version: str) -> str:
    """``<transformers>-torch<torch>-py<X.Y>-<hash>``: the hash covers this hf_genfix (its version and where it
    is installed), so another hf_genfix gets its own environment."""
    import hf_genfix

    package, _ = _package_roots()
    digest = hashlib.sha256(f"{hf_genfix.__version__}|{package}|{sys.executable}".encode()).hexdigest()[:10]
    safe = lambda s: re.sub(r"[^A-Za-z0-9.]+", "_", s)  # noqa: E731
    return f"{safe(version)}-torch{safe(torch_version)}-py{sys.version_info[0]}.{sys.version_info[1]}-{digest}"


def _closure(names: Iterable[str]) -> list[Any]:
    """The installed distributions ``names`` need, themselves included (markers with extras are skipped)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    seen: dict[str, Any] = {}
    todo = list(names)
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen or name in NEVER_LINKED:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency this environment does not have
        seen[name] = dist
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(seen.values())


# The candidate brings its own transformers; hf_genfix is linked from where it runs (``_link_hf_genfix``).
NEVER_LINKED = ("transformers", "hf-genfix")


def shared_distributions(extra: Iterable[str] = ()) -> list[str]:
    """What the candidate environment takes from this one: torch, hf_genfix's own dependencies, pytest and its
    plugins (for ``-- pytest``), and what ``--link`` names (your test suite's other dependencies)."""
    from importlib import metadata

    names = ["torch", "wrapt", "packaging", "pytest"]
    for dist in metadata.distributions():
        if any(ep.group == "pytest11" for ep in dist.entry_points):
            names.append(dist.metadata["Name"])
    return names + list(extra)


def link_distributions(names: Iterable[str], target: Path) -> list[str]:
    """Symlink into ``target`` the top-level entries (packages, modules, .dist-info) of ``names`` and what they
    need, as installed in this interpreter. Only these: the rest of this site-packages (the transformers you run)
    stays out of the new environment."""
    target.mkdir(parents=True, exist_ok=True)
    linked = []
    for dist in _closure(names):
        base = Path(dist.locate_file(""))
        tops = {Path(str(f)).parts[0] for f in dist.files or () if not str(f).startswith("..")}
        for top in sorted(tops):
            source, link = base / top, target / top
            if top.endswith(".pth") or top == "__pycache__" or not source.exists() or link.exists():
                continue
            link.symlink_to(source)
            linked.append(top)
    return linked


def _site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def _link_hf_genfix(site: Path, links: Path) -> list[str]:
    """This hf_genfix, as the running interpreter has it: a wheel's package directory (its manifests inside) is
    linked; a source checkout (manifests in ``patches/`` next to ``src/``) is put on the path by the .pth file,
    so its manifests are found. A small .dist-info registers the pytest plugin, as an install would."""
    import hf_genfix

    package, plugin = _package_roots()
    extra_paths = []
    if (package / "_patches").is_dir():
        (links / "hf_genfix").symlink_to(package)
        if plugin is not None:
            (links / plugin.name).symlink_to(plugin)
    else:
        extra_paths.append(str(package.parent))
    info = links / f"hf_genfix-{hf_genfix.__version__}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: hf-genfix\nVersion: {hf_genfix.__version__}\n")
    (info / "entry_points.txt").write_text("[pytest11]\nhf_genfix = hf_genfix_pytest\n\n"
                                           "[console_scripts]\nhf-genfix = hf_genfix.cli:main\n")
    (info / "INSTALLER").write_text("hf-genfix-upgrade-check\n")
    return extra_paths


def build_env(version: str, root: Path, rebuild: bool = False,
              say: Callable[[str], None] = progress) -> Path:
    """The python of the cached environment for transformers ``version`` (built when missing)."""
    from importlib import metadata

    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        raise UsageError("torch is not installed in this interpreter: the upgrade check reuses your torch") from None
    env = root / env_key(version, torch_version)
    python = env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    done = env / ".hf-genfix-complete"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{env.name}.lock", "w") as lock:
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)  # two checks of the same release build it once
        except ImportError:  # pragma: no cover - Windows: one at a time
            pass
        if done.exists() and not rebuild:
            say(f"environment for transformers {version}: cached ({env})")
            return python
        shutil.rmtree(env, ignore_errors=True)
        start = time.monotonic()
        uv = shutil.which("uv")
        say(f"environment for transformers {version}: building with {'uv' if uv else 'venv + pip'} in {env}")
        try:
            if uv:
                _call([uv, "venv", "--quiet", "--python", sys.executable, str(env)])
            else:
                _call([sys.executable, "-m", "venv", str(env)])
            site = _site_packages(python)
            links = env / "hf-genfix-links"
            linked = link_distributions(shared_distributions(), links)
            extra = _link_hf_genfix(site, links)
            (site / "hf_genfix_upgrade_links.pth").write_text("\n".join([str(links)] + extra) + "\n")
            say(f"  linked torch {torch_version} and {len(linked)} entries of what it needs (no download)")
            req = f"transformers=={version}" if re.match(r"^\d+(\.\d+)*\w*$", version) else version
            say(f"  installing {req}")
            if uv:
                _call([uv, "pip", "install", "--quiet", "--python", str(python), req])
            else:
                _call([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", req])
            check = subprocess.run([str(python), "-c", "import torch, transformers, hf_genfix; "
                                    "print(torch.__version__, transformers.__version__)"],
                                   capture_output=True, text=True)
            if check.returncode != 0:
                raise EnvError(f"the new environment cannot import torch, transformers and hf_genfix:\n"
                               f"{check.stderr[-1500:]}")
        except BaseException:
            shutil.rmtree(env, ignore_errors=True)
            raise
        done.write_text(check.stdout)
        say(f"  built in {time.monotonic() - start:.0f} s: torch, transformers = {check.stdout.strip()}")
    return python


class UsageError(Exception):
    pass


class EnvError(Exception):
    pass


def _call(cmd: Sequence[str]) -> None:
    proc = subprocess.run(list(cmd), capture_output=True, text=True)
    if proc.returncode != 0:
        raise EnvError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-2000:]}")


def _quiet_env(python: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if python != sys.executable:
        env.pop("PYTHONPATH", None)  # the candidate imports its own transformers and the linked hf_genfix only
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_VERBOSITY", "error")
    env.update(extra or {})
    return env


# -- doctor on both releases ------------------------------------------------------------------------------------
def fingerprint() -> str:
    """This hf_genfix's code and manifests as they are on disk (name, size, mtime of each file): a doctor report
    is reused only while neither changed."""
    from ._config import manifest_dir

    package, _ = _package_roots()
    h = hashlib.sha256()
    for root in (package, Path(manifest_dir())):
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".toml") and "__pycache__" not in path.parts and \
                    path.name not in ("upgrade.py", "upgrade_scenarios.py"):  # doctor runs neither
                st = path.stat()
                h.update(f"{path.relative_to(root)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:12]


def run_doctor(python: str, out: Path, extra: Sequence[str] = (), cache: Path | None = None) -> dict[str, Any]:
    """``python -m hf_genfix doctor`` as JSON; with ``cache`` (a file), a report of the same interpreter, release,
    hf_genfix code and options is reused: probes are deterministic, and they are most of a warm run's time."""
    if cache is not None and cache.exists():
        return json.loads(cache.read_text(encoding="utf-8"))
    cmd = [python, "-m", "hf_genfix", "doctor", "--output", str(out), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_quiet_env(python))
    if not out.exists():
        raise EnvError(f"doctor wrote no report ({' '.join(cmd)}):\n{proc.stderr[-2000:]}")
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, cache)
    return json.loads(out.read_text(encoding="utf-8"))


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


# -- models -----------------------------------------------------------------------------------------------------
def run_scenarios(python: str, model: str, out: Path, genfix: bool, trust_remote_code: bool) -> dict[str, Any]:
    cmd = [python, "-m", "hf_genfix.upgrade_scenarios", model, str(out)]
    if trust_remote_code:
        cmd.append("--trust-remote-code")
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          env=_quiet_env(python, {"HF_GENFIX": "on" if genfix else "off"}))
    if not out.exists():
        return {"error": f"the scenario runner failed ({proc.returncode}): {proc.stderr.strip()[-800:]}",
                "scenarios": {}, "patches": {}}
    return json.loads(out.read_text(encoding="utf-8"))


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
            return {"result": "fails on both", "now": now["error"], "there": there["error"]}
        side = "there" if "error" in there else "now"
        return {"result": "fails", "side": side, "error": (there if side == "there" else now)["error"]}
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
        return {"result": "identical", "max_logit_diff": diff}
    return {"result": "differs", "first_step": first, "max_logit_diff": diff,
            "tokens_identical": first is None}


def explain(scenario: str, states_now: Mapping[str, str], states_there: Mapping[str, str],
            families: Mapping[str, str], seen: Iterable[str] = ()) -> list[str]:
    """The patches that can account for a difference in ``scenario``: their state differs between the two runs
    (one release installs it, the other does not) and their family is one the scenario exercises. Where some of
    them were called in the scenario (or while the model loaded), on either release, only those."""
    from .upgrade_scenarios import SCENARIOS

    wanted = SCENARIOS.get(scenario, ("", ()))[1]
    out = []
    for pid in sorted(set(states_now) | set(states_there)):
        a, b = states_now.get(pid), states_there.get(pid)
        if (a in INSTALLED) != (b in INSTALLED) and families.get(pid) in wanted:
            out.append(pid)
    used = [pid for pid in out if pid in set(seen)]
    return used or out


def compare_models(results: Mapping[str, Mapping[str, Any]], families: Mapping[str, str]) -> list[dict[str, Any]]:
    """``results[model][run]`` with run in now-on, now-off, there-on, there-off -> one row per model and
    scenario: with hf_genfix (what you would get after upgrading) and without (upstream alone)."""
    from .upgrade_scenarios import SCENARIOS

    rows = []
    for model, runs in results.items():
        states_now = runs["now-on"].get("patches", {})
        states_there = runs["there-on"].get("patches", {})
        for name in SCENARIOS:
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
            row["improves"] = row["with"]["result"] == "fails" and row["with"]["side"] == "now"
            changed = row["with"]["result"] in ("differs", "fails") and not row["improves"]
            if changed:
                row["explained_by"] = explain(name, states_now, states_there, families, seen)
            row["unexplained"] = changed and not row["explained_by"]
            rows.append(row)
    return rows


# -- the user's tests -------------------------------------------------------------------------------------------
def run_pytest(python: str, args: Sequence[str], xml: Path) -> dict[str, str]:
    """Runs ``python -m pytest ARGS`` with hf_genfix active (``hf-genfix run``; its pytest plugin loads with
    pytest) and returns test id -> passed / failed / error / skipped from its JUnit XML."""
    cmd = [python, "-m", "hf_genfix", "run", "--", python, "-m", "pytest", *args, f"--junitxml={xml}",
           "-p", "no:cacheprovider"]
    subprocess.run(cmd, capture_output=True, text=True, env=_quiet_env(python))
    return read_junit(xml)


def read_junit(xml: Path) -> dict[str, str]:
    if not xml.exists():
        return {}
    out = {}
    for case in ET.parse(xml).iter("testcase"):
        key = f"{case.get('classname', '')}::{case.get('name', '')}"
        kinds = {child.tag for child in case}
        out[key] = ("failed" if "failure" in kinds else "error" if "error" in kinds
                    else "skipped" if "skipped" in kinds else "passed")
    return out


def regressions(now: Mapping[str, str], there: Mapping[str, str]) -> list[str]:
    """Tests that pass now and fail (or error, or are missing) on the candidate."""
    return sorted(t for t, outcome in now.items() if outcome == "passed" and there.get(t, "missing")
                  in ("failed", "error", "missing"))


# -- the summary ------------------------------------------------------------------------------------------------
def summarize(version: str, current: str, patches: Sequence[Mapping[str, Any]],
              models: Sequence[Mapping[str, Any]] | None, tests: Mapping[str, Any] | None) -> dict[str, Any]:
    applying = [p["id"] for p in patches if p["applies_there"]]
    odd = [p for p in patches if p["unexplained"]]
    s: dict[str, Any] = {"from": current, "to": version, "patches_applying": applying,
                         "patches_unexplained": [p["id"] for p in odd]}
    lines = [f"upgrade to {version} (from {current}): {len(applying)} patches will apply"
             + (f" ({', '.join(applying)})" if applying else "")]
    if odd:
        lines.append(f"  hf_genfix on {version}: " + "; ".join(f"{p['id']}: {p['change']}" for p in odd))
    if models is not None:
        same = sum(1 for m in models if m["with"]["result"] == "identical")
        improves = sum(1 for m in models if m.get("improves"))
        differ = [m for m in models if m["with"]["result"] in ("differs", "fails") and not m.get("improves")]
        both = sum(1 for m in models if m["with"]["result"] == "fails on both")
        unexplained = [m for m in differ if m["unexplained"]]
        s.update(scenarios=len(models), identical=same, differ=len(differ), unexplained=len(unexplained),
                 fail_on_both=both, work_only_there=improves)
        how = ("all explained by patches whose state changes" if differ and not unexplained
               else f"{len(unexplained)} unexplained" if differ else "none unexplained")
        lines.append(f"your models: {same} of {len(models)} scenarios identical, {len(differ)} differ ({how})"
                     + (f", {improves} fail now and work there" if improves else "")
                     + (f", {both} fail on both releases" if both else ""))
    if tests is not None:
        s.update(regressions=tests["regressions"], tests_now=len(tests["now"]), tests_there=len(tests["there"]))
        lines.append(f"your tests: {len(tests['regressions'])} regressions "
                     f"({len(tests['now'])} tests run now, {len(tests['there'])} on {version})")
    s["unsafe"] = bool(odd) or bool(models and any(m["unexplained"] for m in models)) or bool(
        tests and tests["regressions"])
    lines.append("verdict: " + ("something unexplained changed: read the lines below before upgrading"
                                if s["unsafe"] else "nothing unexplained changed"))
    s["lines"] = lines
    return s


def render(result: Mapping[str, Any], verbose: bool = False) -> str:
    version = result["to"]
    out = list(result["summary"]["lines"]) + ["", f"patches ({result['from']} -> {version}):"]
    for p in result["patches"]:
        if p["change"] == "unchanged" and not verbose:
            continue
        out.append(f"  {p['id']}: {p['change']}" + (" [UNEXPLAINED]" if p["unexplained"] else ""))
        for note in p["notes"]:
            if verbose or "signature drift" not in note:
                out.append(f"      {note}")
    if result.get("models") is not None:
        out += ["", "your models (with hf_genfix on both releases; 'upstream' = without hf_genfix):"]
        for m in result["models"]:
            w, u = m["with"], m["without"]
            if w["result"] == "identical" and u["result"] == "identical" and not verbose:
                continue
            line = f"  {m['model']} / {m['scenario']}: {_describe(w)}"
            if u["result"] != w["result"] or verbose:
                line += f"; upstream: {_describe(u)}"
            if m["explained_by"]:
                line += f" -- accounted for by {', '.join(m['explained_by'])}"
            elif m["unexplained"]:
                line += " -- UNEXPLAINED"
            out.append(line)
    if result.get("tests") is not None:
        out += ["", f"your tests: pass on {result['from']}, fail on {version}:"]
        out += [f"  {t}" for t in result["tests"]["regressions"]] or ["  none"]
    return "\n".join(out)


def _describe(c: Mapping[str, Any]) -> str:
    if c["result"] == "identical":
        return "identical"
    if c["result"] == "differs":
        by = "an incomparable amount" if c["max_logit_diff"] is None else f"{c['max_logit_diff']:.3g}"
        if c.get("tokens_identical"):
            return f"same tokens, scores differ by {by}"
        return f"differs from step {c['first_step']} (max score difference {by} up to it)"
    if c["result"] == "fails":
        return f"fails on the {'candidate' if c['side'] == 'there' else 'current release'}: {c['error']}"
    if c["now"] == c["there"]:
        return f"fails on both: {c['there']}"
    return f"fails on both: now {c['now']}; there {c['there']}"


# -- the command ------------------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str] | None]:
    argv = list(argv)
    pytest_args = None
    if "--" in argv:
        cut = argv.index("--")
        argv, rest = argv[:cut], argv[cut + 1:]
        if rest[:1] == ["pytest"]:
            rest = rest[1:]
        elif rest[:3] in (["python", "-m", "pytest"],):
            rest = rest[3:]
        else:
            raise UsageError("after --, give `pytest ARGS` (your test suite)")
        pytest_args = rest
    parser = argparse.ArgumentParser(prog="hf-genfix upgrade-check", description=__doc__,
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
    parser.add_argument("--verbose", action="store_true", help="also the lines that are not a decision")
    parser.add_argument("--cache-dir", metavar="DIR", help="where the environments are cached")
    parser.add_argument("--rebuild", action="store_true",
                        help="build the environment again and run doctor again (no cached report)")
    parser.add_argument("--link", action="append", default=[], metavar="DIST",
                        help="also link this installed distribution (and what it needs) into the candidate "
                             "environment, e.g. a dependency of your tests; torch, pytest and its plugins are "
                             "always linked")
    parser.add_argument("--jobs", type=int, default=2, metavar="N",
                        help="run the two releases side by side (default 2; 1: one after the other)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        raise UsageError("") if exc.code else exc
    for model in args.model:
        if not Path(model).is_dir():
            raise UsageError(f"--model {model}: not a folder (give a local checkpoint, as save_pretrained wrote it)")
    return args, pytest_args


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args, pytest_args = parse_args(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        if str(exc):
            sys.stderr.write(f"hf-genfix upgrade-check: {exc}\n")
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    try:
        result = check(args.version, models=args.model,
                       trust_remote_code=args.trust_remote_code, pytest_args=pytest_args, sweep=args.sweep,
                       cache=cache_root(args.cache_dir), rebuild=args.rebuild, links=args.link,
                       jobs=args.jobs)
    except (UsageError, EnvError) as exc:
        sys.stderr.write(f"hf-genfix upgrade-check: {exc}\n")
        return 2
    if args.json:
        json.dump(result, sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    else:
        print(render(result, args.verbose))
    return 1 if result["summary"]["unsafe"] else 0


def check(version: str, models: Sequence[str] = (), trust_remote_code: bool = False,
          pytest_args: Sequence[str] | None = None, sweep: bool = False, cache: Path | None = None,
          rebuild: bool = False, say: Callable[[str], None] = progress, links: Sequence[str] = (),
          jobs: int = 2) -> dict[str, Any]:
    """The whole check (see the module docstring); returns what ``--json`` prints."""
    from importlib import metadata

    from .upgrade_scenarios import SCENARIOS

    import hf_genfix

    try:
        current = metadata.version("transformers")
    except metadata.PackageNotFoundError:
        raise UsageError("transformers is not installed here: nothing to compare against") from None
    start = time.monotonic()
    python = str(build_env(version, cache or cache_root(), rebuild, say))
    manifests = hf_genfix._default().manifests()
    families = {m.id: m.family for m in manifests}
    fixed = {m.id: m.fixed_versions for m in manifests}
    extra = ["--sweep", "--differential", "--quiet"] if sweep else []
    root = cache or cache_root()
    if links:
        link_distributions(links, Path(python).parent.parent / "hf-genfix-links")
    reports = root / "doctor-reports"
    tag = f"{fingerprint()}{'-sweep' if sweep else ''}.json"
    from importlib.metadata import version as dist_version

    here_key = env_key(current, dist_version("torch"))
    if rebuild:
        for stale in reports.glob(f"*-{tag}"):
            stale.unlink()
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    with tempfile.TemporaryDirectory(prefix="hf-genfix-upgrade-") as tmp, pool:
        work = Path(tmp)
        say(f"doctor on transformers {current} (the release you run) and on {version}"
            + (" (reports of an earlier run are reused)" if (reports / f"{here_key}-{tag}").exists() else ""))
        now_f = pool.submit(run_doctor, sys.executable, work / "now.json", extra, reports / f"{here_key}-{tag}")
        there_f = pool.submit(run_doctor, python, work / "there.json", extra,
                              reports / f"{Path(python).parent.parent.name}-{tag}")
        now, there = now_f.result(), there_f.result()
        result: dict[str, Any] = {"from": current, "to": there.get("transformers") or version,
                                  "torch": now.get("torch"), "environment": str(Path(python).parent.parent),
                                  "patches": compare_patches(now, there, fixed), "models": None, "tests": None}
        if sweep:
            new_unknown = _sweep_unknown(there) - _sweep_unknown(now)
            result["sweep_new_unknown"] = sorted(new_unknown)
            for key in sorted(new_unknown):
                result["patches"].append({"id": f"sweep: {key}", "change": "new defect no patch covers",
                                          "applies_now": False, "applies_there": False, "unexplained": True,
                                          "notes": []})
        if models:
            runs: dict[str, dict[str, Any]] = {}
            for i, model in enumerate(models):
                say(f"model {model}: {len(SCENARIOS)} scenarios on {current} and {version}, "
                    "with and without hf_genfix")
                futures = {}
                for label, py in (("now", sys.executable), ("there", python)):
                    for genfix in (True, False):
                        key = f"{label}-{'on' if genfix else 'off'}"
                        futures[key] = pool.submit(run_scenarios, py, str(Path(model).resolve()),
                                                   work / f"m{i}-{key}.json", genfix, trust_remote_code)
                runs[model] = {key: f.result() for key, f in futures.items()}
            result["models"] = compare_models(runs, families)
            result["model_errors"] = {m: {k: r["error"] for k, r in v.items() if "error" in r}
                                      for m, v in runs.items()}
        if pytest_args is not None:
            say(f"your tests (pytest {' '.join(pytest_args)}) on transformers {current} and {version}")
            now_t = pool.submit(run_pytest, sys.executable, pytest_args, work / "now.xml")
            there_t = pool.submit(run_pytest, python, pytest_args, work / "there.xml")
            tests_now, tests_there = now_t.result(), there_t.result()
            result["tests"] = {"now": tests_now, "there": tests_there,
                               "regressions": regressions(tests_now, tests_there)}
    result["summary"] = summarize(result["to"], current, result["patches"], result["models"], result["tests"])
    result["seconds"] = round(time.monotonic() - start, 1)
    say(f"done in {result['seconds']:.0f} s")
    return result


def _sweep_unknown(report: Mapping[str, Any]) -> set[str]:
    sweep = report.get("sweep") or {}
    return {f"{d['arch']} / {d['scenario']}" for d in sweep.get("unknown", [])}


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
