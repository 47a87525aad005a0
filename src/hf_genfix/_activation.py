"""What ``import hf_genfix`` does, kept within its 5 ms budget.

It reads the environment (all-or-nothing, ``ConfigError`` before anything else happens) and waits for
transformers. Only when transformers is imported (or already is) does it load the registry, the manifests,
wrapt and packaging, and watch the patches' target modules: a program that never imports transformers pays
for a directory listing and an environment scan, nothing more. wrapt 2.x alone takes tens of milliseconds to
import (it pulls in asyncio), which is why the import hooks are this small finder rather than wrapt's. It
also sees what wrapt's one-shot hooks do not: every execution of a watched module, so a module that is
re-imported after a failed import (strict mode) or reloaded with ``importlib.reload`` is decided again.
"""

from __future__ import annotations

import os
import sys
from _thread import get_ident

from ._config import Config

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._registry import Registry

_config: Config | None = None
_registry: Registry | None = None
_wanted = False  # activate() was called and revert() has not been since
_watched = {"transformers"}  # modules whose every execution is reported (the registry adds its targets)
_finder_installed = False


def manifest_dir() -> str:
    # A wheel carries the manifests inside the package; a source checkout (editable install) has them at the
    # top of the repository, where the design card puts them.
    here = os.path.dirname(os.path.abspath(__file__))
    packaged = os.path.join(here, "_patches")
    if os.path.isdir(packaged):
        return packaged
    return os.path.join(os.path.dirname(os.path.dirname(here)), "patches")


def patch_ids() -> list[str]:
    """The ids of the shipped patches (a manifest's file name is its id; tests/test_manifests.py checks it)."""
    names: list[str] = []
    try:
        with os.scandir(manifest_dir()) as entries:  # patches/<family>/<id>.toml
            for entry in entries:
                names += os.listdir(entry.path) if entry.is_dir() else [entry.name]
    except FileNotFoundError:
        return []
    return sorted(name[:-5] for name in names if name.endswith(".toml"))


def config() -> Config:
    global _config
    if _config is None:
        parsed = Config.from_environ(os.environ, patch_ids())
        if parsed.log_level is not None:
            _configure_logging(parsed.log_level)
        _config = parsed
    return _config


def registry() -> Registry:
    """The process-wide registry, created on first need (it survives ``importlib.reload(hf_genfix)``)."""
    global _registry
    if _registry is None:
        from ._manifest import load_dir
        from ._registry import Registry

        _registry = Registry(load_dir(manifest_dir()), config())
    return _registry


def activate() -> None:
    global _wanted
    cfg = config()
    _wanted = True
    if not cfg.enabled:
        return
    _install_finder()
    if "transformers" in sys.modules or _registry is not None:
        registry().activate()


def revert() -> None:
    global _wanted
    _wanted = False
    registry().revert()


_listeners: list = []  # registries told of every execution of a watched module


def watch(names: object, listener: object) -> None:
    """Tell ``listener.on_import(name)`` of every later execution of these modules (import, re-import after a
    failed import, ``importlib.reload``)."""
    _watched.update(names)  # type: ignore[arg-type]
    if not any(known is listener for known in _listeners):
        _listeners.append(listener)
    _install_finder()


def _on_executed(name: str) -> None:
    for listener in list(_listeners):
        listener.on_import(name)  # type: ignore[attr-defined]
    if name == "transformers" and _wanted and (_registry is None or not _registry.active):
        registry().activate(trigger=name)


# -- post-import hooks without importing anything --------------------------------------------------------------
class _LoaderProxy:
    """Runs the real loader, then tells hf_genfix that a watched module has been executed."""

    def __init__(self, loader: object):
        self._loader = loader

    def __getattr__(self, name: str) -> object:
        return getattr(self._loader, name)

    def create_module(self, spec: object) -> object:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: object) -> None:
        self._loader.exec_module(module)  # type: ignore[attr-defined]
        module.__loader__ = self._loader  # type: ignore[attr-defined]
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self._loader
        _on_executed(getattr(module, "__name__", ""))


class _WatchFinder:
    """On ``sys.meta_path``: finds a watched module through the other finders and wraps its loader."""

    def __init__(self) -> None:
        self._busy: set[tuple[int, str]] = set()  # per thread: another finder may ask meta_path again

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        key = (get_ident(), fullname)
        if fullname not in _watched or key in self._busy:
            return None
        self._busy.add(key)
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    if getattr(spec, "loader", None) is not None and hasattr(spec.loader, "exec_module"):
                        spec.loader = _LoaderProxy(spec.loader)
                    return spec
            return None
        finally:
            self._busy.discard(key)


def _install_finder() -> None:
    global _finder_installed
    if not _finder_installed:
        _finder_installed = True
        sys.meta_path.insert(0, _WatchFinder())


def _configure_logging(level: str) -> None:
    # transformers' convention (transformers.utils.logging._configure_library_root_logger): the library's root
    # logger gets its own stderr handler and stops propagating, so a program that also calls
    # logging.basicConfig() sees each line once, not once per handler.
    import logging

    log = logging.getLogger("hf_genfix")
    log.setLevel(level.upper())
    if not any(getattr(h, "_hf_genfix", False) for h in log.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handler._hf_genfix = True  # type: ignore[attr-defined]
        log.addHandler(handler)
    log.propagate = False
