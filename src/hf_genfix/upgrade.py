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

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from . import _child
from .verdicts import DOCTOR_FAILING, Word

INSTALLED = ("applied", "forced")
FAILING = DOCTOR_FAILING  # doctor.FAILING, without importing doctor
LOGIT_TOL = 1e-4  # float32 scores that differ by less are the same computation reordered
MARKER = ".hf-genfix-complete"


def progress(message: str) -> None:
    sys.stderr.write(f"upgrade-check: {message}\n")
    sys.stderr.flush()


class UsageError(Exception):
    pass


class EnvError(Exception):
    pass


# -- the cache's files ------------------------------------------------------------------------------------------
def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file in ``path``'s folder, then ``os.replace`` it: a reader (another check,
    or the next one after this one was killed) sees the old file or the whole new one, never a part."""
    from ._atomic import replace_with_text

    path.parent.mkdir(parents=True, exist_ok=True)
    replace_with_text(path, text)


def read_cached(path: Path, valid: Callable[[Any], bool],
                say: Callable[[str], None] = progress) -> Any | None:
    """The JSON in ``path`` if it parses and ``valid`` accepts it; otherwise None, and the file is removed so
    that it is rebuilt (a truncated, empty or wrong-shaped cache file is never trusted)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        data = None
    try:
        ok = data is not None and bool(valid(data))
    except Exception:  # noqa: BLE001 - a validator that trips over the shape is a wrong shape
        ok = False
    if ok:
        return data
    say(f"cached {path.name} does not parse or is incomplete: rebuilding it")
    with contextlib.suppress(OSError):
        path.unlink()
    return None


def valid_report(d: Any) -> bool:
    """A doctor report as ``compare_patches`` reads it."""
    if not isinstance(d, dict) or not isinstance(d.get("transformers"), str):
        return False
    patches = d.get("patches")
    if not isinstance(patches, list) or not patches:
        return False
    for p in patches:
        if not isinstance(p, dict) or not all(isinstance(p.get(k), str) for k in ("id", "state", "verdict")):
            return False
        if not isinstance(p.get("without") or {}, dict) or not isinstance(p.get("targets") or [], list):
            return False
    return True


def valid_scenarios(d: Any) -> bool:
    """What ``hf_genfix.upgrade_scenarios`` writes: per scenario tokens and scores, or an error."""
    if not isinstance(d, dict) or not isinstance(d.get("scenarios"), dict):
        return False
    if "error" in d:
        return isinstance(d["error"], str)
    if not d["scenarios"]:
        return False
    for r in d["scenarios"].values():
        if not isinstance(r, dict):
            return False
        if "error" not in r and not (isinstance(r.get("tokens"), list) and isinstance(r.get("scores"), list)):
            return False
    return isinstance(d.get("patches", {}), dict)


def _valid_marker(d: Any) -> bool:
    return isinstance(d, dict) and isinstance(d.get("torch"), str) and isinstance(d.get("transformers"), str)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[Callable[[], None]]:
    """Hold an exclusive lock on ``path``; yields ``drop()``, which removes the lock file before it is released
    (a failed build leaves no lock behind). A waiter whose file was removed meanwhile locks the new one."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: one at a time
        fcntl = None  # type: ignore[assignment]
    while True:
        fh = open(path, "a")
        if fcntl is not None:
            fcntl.flock(fh, fcntl.LOCK_EX)  # two checks of the same release build it once
        try:
            same = os.fstat(fh.fileno()).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        fh.close()
    dropped = []
    try:
        yield lambda: dropped.append(True)
    finally:
        if dropped:
            with contextlib.suppress(OSError):
                os.unlink(path)
        fh.close()


def sweep_locks(root: Path) -> list[str]:
    """Remove the lock files no check holds whose environment is not complete (a failed or interrupted build,
    a mistyped release of an earlier hf_genfix): they would accumulate, one per attempt."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        return []
    removed = []
    for lock in sorted(root.glob("*.lock")):
        if read_cached(root / lock.stem / MARKER, _valid_marker, lambda _: None) is not None:
            continue
        try:
            with open(lock, "a") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if os.fstat(fh.fileno()).st_ino == os.stat(lock).st_ino:
                    os.unlink(lock)
                    removed.append(lock.name)
        except OSError:
            continue  # held by a running check, or gone
    return removed


# -- the arguments ----------------------------------------------------------------------------------------------
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


# -- the environment --------------------------------------------------------------------------------------------
def cache_root(given: str | None = None) -> Path:
    if given:
        return Path(_child.absolute(given))
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


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(names: Iterable[str]) -> list[Any]:
    """The installed distributions ``names`` need, themselves included (markers with extras are skipped)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    seen: dict[str, Any] = {}
    todo = list(names)
    while todo:
        name = _canonical(todo.pop())
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
            if top.endswith(".pth") or top == "__pycache__" or not source.exists() or os.path.lexists(link):
                continue
            link.symlink_to(source)
            linked.append(top)
    return linked


def _direct_url(dist: Any) -> dict[str, Any]:
    try:
        info = json.loads(dist.read_text("direct_url.json") or "null")
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def user_distributions() -> list[tuple[str, bool]]:
    """Your own packages as this interpreter has them: every distribution installed from a local folder or file
    (``pip install -e .``, ``pip install .``, a local wheel; pip and uv record it in ``direct_url.json``), as
    (name, editable). transformers and hf_genfix are never among them (the candidate brings its own)."""
    from importlib import metadata

    out: dict[str, bool] = {}
    for dist in metadata.distributions():
        name = _canonical(dist.metadata["Name"] or "")
        if not name or name in NEVER_LINKED or name in out:
            continue  # the first one on sys.path is the one imported
        info = _direct_url(dist)
        editable = bool((info.get("dir_info") or {}).get("editable"))
        if editable or str(info.get("url", "")).startswith("file:"):
            out[name] = editable
    return sorted(out.items())


def editable_path_lines(name: str) -> list[str]:
    """The lines of the ``.pth`` files an editable install of ``name`` put in site-packages: a source folder
    (``/home/me/proj/src``) or an ``import __editable___proj_finder; ...install()`` line (setuptools' finder,
    hatch's editables). Relative folders are made absolute against the site-packages they were in."""
    from importlib import metadata

    dist = metadata.distribution(name)
    base = Path(dist.locate_file(""))
    lines = []
    for f in dist.files or ():
        if str(f).endswith(".pth") and len(Path(str(f)).parts) == 1:
            try:
                text = (base / str(f)).read_text(encoding="utf-8")
            except OSError:
                continue
            for line in text.splitlines():
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith(("import ", "import\t")):
                    lines.append(line)
                else:
                    lines.append(str(base / line) if not os.path.isabs(line) else line)
    return lines


def link_user_packages(python: Path, say: Callable[[str], None] = progress) -> list[str]:
    """Put your own packages (``user_distributions``) and what they need into the candidate environment, on
    every run (what you installed since the last run is seen): their files are linked into
    ``hf-genfix-user/``, and the lines of editable installs' .pth files are copied to a .pth file of the
    candidate's site-packages, after that folder (so a finder module linked there imports). Returns the
    names, ``(editable)`` marked."""
    env = python.parent.parent
    user_dir = env / "hf-genfix-user"
    shutil.rmtree(user_dir, ignore_errors=True)  # links only: rebuilt from what is installed now
    user_dir.mkdir(parents=True)
    users = user_distributions()
    link_distributions([n for n, _ in users], user_dir)
    lines = [str(user_dir)]
    for name, editable in users:
        if editable:
            lines += editable_path_lines(name)
    write_atomic(_site_packages(python) / "hf_genfix_upgrade_user.pth", "\n".join(lines) + "\n")
    return [f"{n} (editable)" if e else n for n, e in users]


_purelib: dict[str, Path] = {}


def _site_packages(python: Path) -> Path:
    key = str(python)
    if key not in _purelib:
        out = _child.run(_child.argv(key, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"),
                         capture_output=True, text=True, check=True, env=_quiet_env(key))
        _purelib[key] = Path(out.stdout.strip())
    return _purelib[key]


def _link_hf_genfix(site: Path, links: Path) -> list[str]:
    """This hf_genfix, as the running interpreter has it: a wheel's package directory (its manifests inside) is
    linked; a source checkout (manifests in ``patches/`` next to ``src/``) is put on the path by the .pth file,
    so its manifests are found. A small .dist-info registers the pytest plugin, as an install would."""
    import hf_genfix

    package, plugin = _package_roots()
    extra_paths = []
    if (package / "_patches" / "verified.json").is_file():  # a wheel: the catalog ships inside the package
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


def env_path(version: str, root: Path) -> Path:
    from importlib import metadata

    return root / env_key(version, metadata.version("torch"))


def env_python(env: Path) -> Path:
    return env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def env_ready(env: Path) -> bool:
    """A complete environment: its marker (written last, atomically) parses and its interpreter is there."""
    return env_python(env).exists() and read_cached(env / MARKER, _valid_marker, lambda _: None) is not None


def build_env(version: str, root: Path, rebuild: bool = False,
              say: Callable[[str], None] = progress) -> Path:
    """The python of the cached environment for transformers ``version`` (built when missing)."""
    from importlib import metadata

    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        raise UsageError("torch is not installed in this interpreter: the upgrade check reuses your torch") from None
    env = env_path(version, root)
    python = env_python(env)
    root.mkdir(parents=True, exist_ok=True)
    sweep_locks(root)
    with _locked(root / f"{env.name}.lock") as drop:
        if env_ready(env) and not rebuild:
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
                _call(_child.argv(sys.executable, "-m", "venv", str(env)))
            _purelib.pop(str(python), None)
            site = _site_packages(python)
            links = env / "hf-genfix-links"
            linked = link_distributions(shared_distributions(), links)
            extra = _link_hf_genfix(site, links)
            (site / "hf_genfix_upgrade_links.pth").write_text("\n".join([str(links)] + extra) + "\n")
            say(f"  linked torch {torch_version} and {len(linked)} entries of what it needs (no download)")
            req = f"transformers=={version}"
            say(f"  installing {req}")
            if uv:
                _call([uv, "pip", "install", "--quiet", "--python", str(python), req])
            else:
                _call(_child.argv(str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                                  req))
            check = _child.run(_child.argv(str(python), "-c", "import torch, transformers, hf_genfix; "
                                           "print(torch.__version__, transformers.__version__)"),
                               capture_output=True, text=True, env=_quiet_env(str(python)))
            if check.returncode != 0:
                raise EnvError(f"the new environment cannot import torch, transformers and hf_genfix:\n"
                               f"{check.stderr[-1500:]}")
            torch_there, transformers_there = check.stdout.split()[-2:]
            write_atomic(env / MARKER, json.dumps({"torch": torch_there, "transformers": transformers_there}))
        except BaseException:
            shutil.rmtree(env, ignore_errors=True)
            drop()  # no lock file is left for a release that could not be built
            raise
        say(f"  built in {time.monotonic() - start:.0f} s: torch, transformers = {check.stdout.strip()}")
    return python


def _call(cmd: Sequence[str]) -> None:
    proc = _child.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = [ln for ln in (proc.stdout + proc.stderr).strip().splitlines() if not ln.startswith("WARNING")]
        raise EnvError(f"{' '.join(cmd)} failed ({proc.returncode}): " + " / ".join(tail[-3:])[-600:])


def _user_pythonpath(python: str) -> str | None:
    """``PYTHONPATH`` for a child running your code (scenarios, tests): made absolute; in the candidate, without
    entries that hold a transformers (this environment's site-packages, a checkout), which would hide its own."""
    value = _child.environ().get("PYTHONPATH")
    if not value or python == sys.executable:
        return value
    keep = [p for p in value.split(os.pathsep)
            if not os.path.exists(os.path.join(p, "transformers", "__init__.py"))]
    return os.pathsep.join(keep) or None


def _quiet_env(python: str, extra: Mapping[str, str] | None = None, user_path: bool = False) -> dict[str, str]:
    """The children's environment: ``PYTHONPATH`` only where the child runs your code (``user_path``; see
    ``_user_pythonpath``), and only absolute entries (``_child.environ``)."""
    env = _child.environ()
    env.pop("PYTHONPATH", None)
    if user_path or python == sys.executable:
        value = _user_pythonpath(python)
        if value:
            env["PYTHONPATH"] = value
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_VERBOSITY", "error")
    env.update(extra or {})
    return env


# -- doctor on both releases ------------------------------------------------------------------------------------
def fingerprint(with_scenarios: bool = False) -> str:
    """This hf_genfix's code and manifests as they are on disk (name, size, mtime of each file): a doctor report
    (or, ``with_scenarios``, a scenario result) is reused only while neither changed."""
    from ._config import manifest_dir

    package, _ = _package_roots()
    skip = ("upgrade.py", "_upgrade_pytest.py") + (() if with_scenarios else ("upgrade_scenarios.py",))
    h = hashlib.sha256()
    for root in (package, Path(manifest_dir())):
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".toml") and "__pycache__" not in path.parts and path.name not in skip:
                st = path.stat()
                h.update(f"{path.relative_to(root)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:12]


def installed_digest(python: str) -> str:
    """What is installed where ``python`` imports from (the names of its .dist-info folders, which carry the
    versions, in its site-packages and the links of a candidate): a cached result of this interpreter is
    reused only while none of them changed. No interpreter is started for it."""
    if python == sys.executable:
        dirs = [p for p in sys.path if p and os.path.isdir(p)]
    else:
        env = Path(python).parent.parent
        dirs = [str(_site_packages(Path(python))), str(env / "hf-genfix-links"), str(env / "hf-genfix-user")]
    names = []
    for d in dirs:
        with contextlib.suppress(OSError):
            names += [f"{d}/{n}" for n in os.listdir(d) if n.endswith((".dist-info", ".egg-info", ".pth"))]
    return hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()[:12]


def run_doctor(python: str, out: Path, extra: Sequence[str] = (), cache: Path | None = None,
               say: Callable[[str], None] = progress) -> dict[str, Any]:
    """``python -m hf_genfix doctor`` as JSON; with ``cache`` (a file), a report of the same interpreter, release,
    hf_genfix code and options is reused: probes are deterministic, and they are most of a warm run's time. A
    cached report that does not parse or validate is run again; the new one is written atomically."""
    if cache is not None:
        cached = read_cached(cache, valid_report, say)
        if cached is not None:
            return cached
    cmd = _child.argv(python, "-m", "hf_genfix", "doctor", "--output", _child.absolute(out), *extra)
    proc = _child.run(cmd, capture_output=True, text=True, env=_quiet_env(python))
    written = _written(out, valid_report)
    if written is None:
        tail = proc.stderr.strip().splitlines()[-5:]
        raise EnvError(f"doctor wrote no usable report ({' '.join(cmd)}, exit {proc.returncode}): "
                       + " / ".join(tail))
    if cache is not None:
        write_atomic(cache, written[0])
    return written[1]


def _written(path: Path, valid: Callable[[Any], bool]) -> tuple[str, Any] | None:
    """(text, data) of the JSON a child wrote to ``path``, or None when it wrote none that ``valid`` accepts."""
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, ValueError):
        return None
    return (text, data) if valid(data) else None


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
def model_digest(path: str) -> str:
    """The checkpoint folder's files (name, size, mtime): a scenario result is reused only while none changed."""
    h = hashlib.sha256()
    for f in sorted(Path(path).rglob("*")):
        if f.is_file():
            st = f.stat()
            h.update(f"{f.relative_to(path)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:12]


def run_scenarios(python: str, model: str, out: Path, genfix: bool, trust_remote_code: bool,
                  cache: Path | None = None, say: Callable[[str], None] = progress) -> dict[str, Any]:
    """The scenarios of one checkpoint in one interpreter, with or without hf_genfix. With ``cache`` (a file
    named after everything the result depends on), a valid earlier result is reused."""
    if cache is not None:
        cached = read_cached(cache, valid_scenarios, say)
        if cached is not None:
            return cached
    cmd = _child.argv(python, "-m", "hf_genfix.upgrade_scenarios", _child.absolute(model), _child.absolute(out))
    if trust_remote_code:
        cmd.append("--trust-remote-code")
    proc = _child.run(cmd, capture_output=True, text=True,
                      env=_quiet_env(python, {"HF_GENFIX": "on" if genfix else "off"}, user_path=True))
    written = _written(out, valid_scenarios)
    if written is None:
        return {"error": f"the scenario runner failed ({proc.returncode}): {proc.stderr.strip()[-800:]}",
                "scenarios": {}, "patches": {}}
    text, result = written
    if cache is not None and "error" not in result:  # a load error may be passing (a file being written)
        write_atomic(cache, text)
    return result


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
    from .upgrade_scenarios import ALL_SCENARIOS

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
    from .upgrade_scenarios import ALL_SCENARIOS, SCENARIOS

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


# -- the user's tests -------------------------------------------------------------------------------------------
def _pytest_argv(python: str, cwd_on_path: bool) -> list[str]:
    return [python, "-m", "pytest"] if cwd_on_path else _child.argv(python, "-m", "pytest")


def run_pytest(python: str, args: Sequence[str], report: Path, cwd_on_path: bool = False) -> dict[str, Any]:
    """Runs ``python -m pytest ARGS`` in the folder the check was run from (your project: its code is meant to
    be imported there, as when you run pytest), with hf_genfix active (``hf-genfix run``; its pytest plugin
    loads with pytest) and ``hf_genfix._upgrade_pytest`` writing per test its outcome, a pasteable node id and
    its failure lines, and the calls per patch. ``hf_genfix run`` itself starts isolated (``_child.argv``);
    pytest gets the current folder on its path only where you wrote ``python -m pytest`` (``cwd_on_path``)."""
    cmd = _child.argv(python, "-m", "hf_genfix", "run", "--", *_pytest_argv(python, cwd_on_path), *args,
                      "-p", "hf_genfix._upgrade_pytest", f"--hf-genfix-upgrade-report={_child.absolute(report)}",
                      "-p", "no:cacheprovider")
    proc = _child.run(cmd, capture_output=True, text=True, env=_quiet_env(python, user_path=True), cwd=os.getcwd())
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
        tests = {t: e for t, e in data["tests"].items() if isinstance(e, dict) and "outcome" in e}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        data, tests = {}, {}
    output = [ln for ln in (proc.stdout + proc.stderr).strip().splitlines() if ln.strip()]
    return {"outcomes": {t: e["outcome"] for t, e in tests.items()},
            "lines": {t: e["lines"] for t, e in tests.items() if e.get("lines")},
            "collect_errors": data.get("collect_errors") or {}, "patch_calls": data.get("patch_calls") or {},
            "exit": proc.returncode, "output_tail": output[-3:]}


def regressions(now: Mapping[str, str], there: Mapping[str, str]) -> list[str]:
    """Tests that pass now and fail (or error, or are missing) on the candidate."""
    return sorted(t for t, outcome in now.items() if outcome == "passed" and there.get(t, "missing")
                  in ("failed", "error", "missing"))


def rerun_command(python: str, test_id: str, cwd_on_path: bool = False) -> str:
    """The command that reruns ``test_id`` as the check ran it: from this folder, in ``python``'s environment,
    with hf_genfix active and the ``PYTHONPATH`` the check gave it."""
    parts = ["cd", shlex.quote(os.getcwd()), "&&"]
    if os.environ.get("PYTHONPATH"):
        parts.append("PYTHONPATH=" + shlex.quote(_user_pythonpath(python) or ""))
    parts += [shlex.quote(python), "-m", "hf_genfix", "run", "--",
              *map(shlex.quote, _pytest_argv(python, cwd_on_path)), shlex.quote(test_id)]
    return " ".join(parts)


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


# -- the summary ------------------------------------------------------------------------------------------------
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


def render(result: Mapping[str, Any], verbose: bool = False) -> str:
    """The summary, then what to read: each regression (its failure lines, its rerun command), each scenario
    that changed with hf_genfix, each patch that needs a decision or that your models and tests go through.
    ``verbose``: every patch and scenario."""
    version = result["to"]
    out = list(result["summary"]["lines"])
    tests = result.get("tests")
    if tests and tests["regressions"]:
        out += ["", f"your tests that pass on {result['from']} and fail on {version}:"]
        for r in tests["regressions"]:
            out.append(f"  {r['id']} ({r['there']} there)")
            out += [f"      {ln}" for ln in r["lines"]]
            out.append(f"      rerun there: {r['rerun']}")
    if result.get("models") is not None:
        shown, hidden = [], 0
        for m in result["models"]:
            w, u = m["with"], m["without"]
            if w["result"] == Word.IDENTICAL and (u["result"] == Word.IDENTICAL or not verbose):
                hidden += u["result"] != Word.IDENTICAL
                continue
            line = f"  {m['model']} / {m['scenario']}: {_describe(w)}"
            if u["result"] != w["result"] or verbose:
                line += f"; upstream: {_describe(u)}"
            if m["explained_by"]:
                line += f" -- accounted for by {', '.join(m['explained_by'])}"
            elif m["unexplained"]:
                line += " -- UNEXPLAINED"
            shown.append(line[:400])
        if shown:
            out += ["", "your models (with hf_genfix on both releases; 'upstream' = without hf_genfix):"] + shown
        if hidden:
            out.append(f"  ({hidden} scenarios differ or fail between the releases without hf_genfix and are "
                       "identical with it: --verbose)")
    used = result["summary"].get("patches_used") or {}
    rows = [p for p in result["patches"] if verbose or p["unexplained"] or p["id"] in used]
    if rows:
        out += ["", f"patches ({result['from']} -> {version})"
                + ("" if verbose else ": those that need a decision or that your models and tests go through")
                + ":"]
        for p in rows:
            out.append(f"  {p['id']}: {p['change']}" + (" [UNEXPLAINED]" if p["unexplained"] else ""))
            for note in p["notes"]:
                if verbose or "signature drift" not in note:
                    out.append(f"      {note}")
    return "\n".join(out)


def _describe(c: Mapping[str, Any]) -> str:
    if c["result"] == Word.IDENTICAL:
        return Word.IDENTICAL
    if c["result"] == Word.DIFFERS:
        by = "an incomparable amount" if c["max_logit_diff"] is None else f"{c['max_logit_diff']:.3g}"
        if c.get("tokens_identical"):
            return f"same tokens, scores differ by {by}"
        return f"differs from step {c['first_step']} (max score difference {by} up to it)"
    if c["result"] == Word.FAILS:
        return f"fails on the {'candidate' if c['side'] == 'there' else 'current release'}: {c['error']}"
    if c["now"] == c["there"]:
        return f"fails on both: {c['there']}"
    return f"fails on both: now {c['now']}; there {c['there']}"


# -- the command ------------------------------------------------------------------------------------------------
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
        print(render(result, args.verbose))
    summary = result["summary"]
    return 1 if summary["unsafe"] or summary["no_evidence"] else 0


def check(version: str, models: Sequence[str] = (), trust_remote_code: bool = False,
          pytest_args: Sequence[str] | None = None, sweep: bool = False, cache: Path | None = None,
          rebuild: bool = False, say: Callable[[str], None] = progress, links: Sequence[str] = (),
          jobs: int = 2, pytest_cwd_on_path: bool = False) -> dict[str, Any]:
    """The whole check (see the module docstring); returns what ``--json`` prints."""
    from importlib import metadata

    from .upgrade_scenarios import SCENARIOS

    import hf_genfix

    try:
        current = metadata.version("transformers")
    except metadata.PackageNotFoundError:
        raise UsageError("transformers is not installed here: nothing to compare against") from None
    start = time.monotonic()
    root = cache or cache_root()
    if rebuild or not env_ready(env_path(version, root)):
        check_on_index(version)  # the one look-up, before minutes of building
    python = str(build_env(version, root, rebuild, say))
    manifests = hf_genfix._activation.registry().manifests()
    families = {m.id: m.family for m in manifests}
    fixed = {m.id: m.fixed_versions for m in manifests}
    extra = ["--sweep", "--differential", "--quiet"] if sweep else []
    if links:
        link_distributions(links, Path(python).parent.parent / "hf-genfix-links")
    if models or pytest_args is not None:
        mine = link_user_packages(Path(python))
        if mine:
            say(f"your packages, linked into the environment of {version}: {', '.join(mine)}")
    reports = root / "doctor-reports"
    here_key = f"{env_key(current, metadata.version('torch'))}-{installed_digest(sys.executable)}"
    there_key = f"{Path(python).parent.parent.name}-{installed_digest(python)}"
    tag = f"{fingerprint()}{'-sweep' if sweep else ''}.json"
    results = root / "scenario-results"
    if rebuild:
        for stale in [*reports.glob(f"*-{tag}"), *results.glob("*.json")]:
            stale.unlink()
    scenario_tag = hashlib.sha256(f"{fingerprint(True)}|{os.environ.get('PYTHONPATH', '')}|{trust_remote_code}"
                                  .encode()).hexdigest()[:12]
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    with tempfile.TemporaryDirectory(prefix="hf-genfix-upgrade-") as tmp, pool:
        work = Path(tmp)
        say(f"doctor on transformers {current} (the release you run) and on {version}"
            + (" (reports of an earlier run are reused)" if (reports / f"{here_key}-{tag}").exists() else ""))
        now_f = pool.submit(run_doctor, sys.executable, work / "now.json", extra, reports / f"{here_key}-{tag}", say)
        there_f = pool.submit(run_doctor, python, work / "there.json", extra, reports / f"{there_key}-{tag}", say)
        now, there = now_f.result(), there_f.result()
        result: dict[str, Any] = {"from": current, "to": there.get("transformers") or version,
                                  "torch": now.get("torch"), "environment": str(Path(python).parent.parent),
                                  "patches": compare_patches(now, there, fixed), "models": None, "tests": None}
        # The matrix judged each release with the torch versions in patches/judged-torch.json (docs/matrix.md, the
        # torch axis); a probe's verdict can change with torch, so say when the user's is none of them.
        from .catalog import torch_not_judged

        result["torch_not_judged"] = torch_not_judged(result["to"], now.get("torch"))
        if sweep:
            new_unknown = _sweep_unknown(there) - _sweep_unknown(now)
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
                digest = model_digest(model)
                say(f"model {model}: {len(SCENARIOS)} scenarios (and the tokenizer's, if it has one) on {current} "
                    f"and {version}, with and without hf_genfix")
                futures = {}
                for label, py, key in (("now", sys.executable, here_key), ("there", python, there_key)):
                    for genfix in (True, False):
                        run = f"{label}-{'on' if genfix else 'off'}"
                        name = hashlib.sha256(f"{key}|{_child.absolute(model)}|{digest}|{scenario_tag}|{genfix}"
                                              .encode()).hexdigest()[:20]
                        futures[run] = pool.submit(run_scenarios, py, model, work / f"m{i}-{run}.json", genfix,
                                                   trust_remote_code, results / f"{name}.json", say)
                runs[model] = {run: f.result() for run, f in futures.items()}
                for pid, n in patch_calls(runs[model]["there-on"]).items():
                    used[pid] = used.get(pid, 0) + n
                tok = tokenizer_facts(runs[model])
                if tok is not None:
                    tokenizers[model] = tok
            result["models"] = compare_models(runs, families)
            result["model_errors"] = {m: {k: r["error"] for k, r in v.items() if "error" in r}
                                      for m, v in runs.items()}
            result["tokenizers"] = tokenizers
        if pytest_args is not None:
            say(f"your tests (pytest {' '.join(pytest_args)}) on transformers {current} and {version}")
            now_t = pool.submit(run_pytest, sys.executable, pytest_args, work / "now-tests.json",
                                pytest_cwd_on_path)
            there_t = pool.submit(run_pytest, python, pytest_args, work / "there-tests.json", pytest_cwd_on_path)
            tests_now, tests_there = now_t.result(), there_t.result()
            for pid, n in tests_there["patch_calls"].items():
                used[pid] = used.get(pid, 0) + n
            ids = regressions(tests_now["outcomes"], tests_there["outcomes"])
            result["tests"] = {"now": tests_now["outcomes"], "there": tests_there["outcomes"],
                               "regressions": explain_regressions(ids, tests_there, python, pytest_cwd_on_path),
                               "exit_now": tests_now["exit"], "exit_there": tests_there["exit"],
                               "output_now": tests_now["output_tail"],
                               "patch_calls_now": tests_now["patch_calls"],
                               "patch_calls_there": tests_there["patch_calls"]}
    result["summary"] = summarize(result["to"], current, result["patches"], result["models"], result["tests"],
                                  used, tokenizers)
    if result.get("torch_not_judged"):
        result["summary"]["lines"].insert(1, result["torch_not_judged"])
    result["seconds"] = round(time.monotonic() - start, 1)
    result["load_average"] = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    say(f"done in {result['seconds']:.0f} s (load average {result['load_average']})")
    return result


def _sweep_unknown(report: Mapping[str, Any]) -> set[str]:
    sweep = report.get("sweep") or {}
    return {f"{d['arch']} / {d['scenario']}" for d in sweep.get("unknown", [])}


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
