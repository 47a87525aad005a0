"""The candidate environment: built once per release (and torch, Python, hf_genfix), with your torch, your
packages and this hf_genfix linked in, never downloaded again."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from .. import _child
from .cache import MARKER, locked, read_cached, sweep_locks, valid_marker, write_atomic
from .common import EnvError, UsageError, progress


def cache_root(given: str | None = None) -> Path:
    if given:
        return Path(_child.absolute(given))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hf_genfix" / "envs"


def package_roots() -> tuple[Path, Path | None]:
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

    package, _ = package_roots()
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
    write_atomic(site_packages(python) / "hf_genfix_upgrade_user.pth", "\n".join(lines) + "\n")
    return [f"{n} (editable)" if e else n for n, e in users]


_purelib: dict[str, Path] = {}


def site_packages(python: Path) -> Path:
    key = str(python)
    if key not in _purelib:
        out = _child.run(_child.argv(key, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"),
                         capture_output=True, text=True, check=True, env=quiet_env(key))
        _purelib[key] = Path(out.stdout.strip())
    return _purelib[key]


def _link_hf_genfix(site: Path, links: Path) -> list[str]:
    """This hf_genfix, as the running interpreter has it: a wheel's package directory (its manifests inside) is
    linked; a source checkout (manifests in ``patches/`` next to ``src/``) is put on the path by the .pth file,
    so its manifests are found. A small .dist-info registers the pytest plugin, as an install would."""
    import hf_genfix

    package, plugin = package_roots()
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
    return env_python(env).exists() and read_cached(env / MARKER, valid_marker, lambda _: None) is not None


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
    with locked(root / f"{env.name}.lock") as drop:
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
            site = site_packages(python)
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
                               capture_output=True, text=True, env=quiet_env(str(python)))
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


def user_pythonpath(python: str) -> str | None:
    """``PYTHONPATH`` for a child running your code (scenarios, tests): made absolute; in the candidate, without
    entries that hold a transformers (this environment's site-packages, a checkout), which would hide its own."""
    value = _child.environ().get("PYTHONPATH")
    if not value or python == sys.executable:
        return value
    keep = [p for p in value.split(os.pathsep)
            if not os.path.exists(os.path.join(p, "transformers", "__init__.py"))]
    return os.pathsep.join(keep) or None


def quiet_env(python: str, extra: Mapping[str, str] | None = None, user_path: bool = False) -> dict[str, str]:
    """The children's environment: ``PYTHONPATH`` only where the child runs your code (``user_path``; see
    ``user_pythonpath``), and only absolute entries (``_child.environ``)."""
    env = _child.environ()
    env.pop("PYTHONPATH", None)
    if user_path or python == sys.executable:
        value = user_pythonpath(python)
        if value:
            env["PYTHONPATH"] = value
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_VERBOSITY", "error")
    env.update(extra or {})
    return env
