"""Post-import hooks that import nothing: every execution of a watched module is told to its listeners.

wrapt 2.x alone takes tens of milliseconds to import (it pulls in asyncio), which is why the import hooks are this
small finder rather than wrapt's. It also sees what wrapt's one-shot hooks do not: every execution of a watched
module, so a module that is re-imported after a failed import (strict mode) or reloaded with
``importlib.reload`` is decided again. It knows nothing of patches: the registry and ``_activation`` listen.
"""

import sys
from _thread import get_ident

_watched: set = set()  # modules whose every execution is reported
_finder_installed = False
_listeners: list = []  # told of every execution of a watched module: the registries, then _activation's


def watch(names: object, listener: object, last: bool = False) -> None:
    """Tell ``listener.on_import(name)`` of every later execution of these modules (import, re-import after a
    failed import, ``importlib.reload``); a ``last`` listener hears after every other."""
    _watched.update(names)  # type: ignore[arg-type]
    if not any(known is listener for known, _ in _listeners):
        _listeners.append((listener, last))
        _listeners.sort(key=lambda known: known[1])  # stable: registries in the order they came
    _install_finder()


def _on_executed(name: str) -> None:
    for listener, _ in list(_listeners):
        listener.on_import(name)  # type: ignore[attr-defined]


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
        self._busy: "set[tuple[int, str]]" = set()  # per thread: another finder may ask meta_path again

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
