"""What the remote-code patches share: which classes are remote code, and serving removed names to it only.

Remote code is what ``trust_remote_code=True`` loads: transformers executes a repo's ``modeling_*.py`` /
``configuration_*.py`` as modules named ``transformers_modules.<repo>.<file>``, always through
``transformers.dynamic_module_utils.get_class_in_module`` (every release measured, 4.40 - 5.24). The patches
that bring back a removed name wrap that function: while it executes a remote module, the names are served
(a module through a ``sys.meta_path`` finder, an attribute set on its module), and afterwards they are gone
again (also from ``sys.modules``), so that nothing but the remote module that imported them sees them. Remote
code that imports a removed name only later, inside a function, is not served.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from typing import Any, Callable, Mapping

REMOTE_PREFIX = "transformers_modules"
LOADER = "transformers.dynamic_module_utils:get_class_in_module"
_LOCK = threading.RLock()


def is_remote(cls: type) -> bool:
    """Whether ``cls`` was defined by a module that ``trust_remote_code`` loaded."""
    return (getattr(cls, "__module__", "") or "").startswith(REMOTE_PREFIX)


def module_globals(cls: type) -> Mapping[str, Any]:
    module = sys.modules.get(getattr(cls, "__module__", "") or "")
    return vars(module) if module is not None else {}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves ``{module name: factory}`` (factory() -> a module object) to imports that find nothing else."""

    def __init__(self, modules: Mapping[str, Callable[[], Any]]):
        self.modules = dict(modules)
        self.served: list[Any] = []

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in self.modules:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: Any) -> Any:
        module = self.modules[spec.name]()
        self.served.append(module)
        return module

    def exec_module(self, module: Any) -> None:
        return None


def restoring(modules: Mapping[str, Callable[[], Any]] | None = None,
              names: Mapping[str, Mapping[str, Callable[[], Any]]] | None = None) -> Callable:
    """A wrapper for ``get_class_in_module`` that serves removed ``modules`` and module attributes ``names``
    (``{module: {name: factory}}``) while a remote module is executed. Only what is missing is served."""
    modules = {m: f for m, f in (modules or {}).items() if not _exists(m)}
    names = dict(names or {})

    def wrapper(wrapped: Callable, instance: Any, args: tuple, kwargs: dict) -> Any:
        with _LOCK:
            finder = _Finder(modules) if modules else None
            if finder is not None:
                sys.meta_path.append(finder)  # last: a module that exists is always found first
            added: list[tuple[Any, str, Any]] = []
            try:
                for module_name, attrs in names.items():
                    module = sys.modules.get(module_name) or importlib.import_module(module_name)
                    for attr, factory in attrs.items():
                        if not _has(module, attr):
                            value = factory()
                            setattr(module, attr, value)
                            added.append((module, attr, value))
                return wrapped(*args, **kwargs)
            finally:
                for module, attr, value in reversed(added):
                    if vars(module).get(attr) is value:
                        delattr(module, attr)
                if finder is not None:
                    sys.meta_path.remove(finder)
                    for module in finder.served:
                        _forget(module)

    return wrapper


def _forget(module: Any) -> None:
    """Take a served module out of ``sys.modules`` and off its parent package (the import system put it on both)."""
    name = module.__name__
    if sys.modules.get(name) is module:
        del sys.modules[name]
    parent_name, _, child = name.rpartition(".")
    parent = sys.modules.get(parent_name)
    if parent is not None and vars(parent).get(child) is module:
        delattr(parent, child)


def _exists(module_name: str) -> bool:
    if module_name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):
        return False


def _has(module: Any, attr: str) -> bool:
    if attr in vars(module):
        return True
    try:  # transformers' lazy top-level module resolves names on first access
        getattr(module, attr)
        return True
    except (AttributeError, ImportError, ModuleNotFoundError):
        return False
