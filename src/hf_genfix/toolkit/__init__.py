"""The toolkit a fix stands on: the one public surface a patch's ``fix.py`` imports from hf_genfix.

A fix module (``patches/<family>/<id>/fix.py``) imports from this package, from the public helpers
(``hf_genfix.helpers``) and from its own family's shared modules (``patches/<family>/shared/``), and from nothing
else of hf_genfix: not the core's private modules, not the oracles (the probe, ``probe.py``, is where the lab
is used), not another family's code, not another patch's folder. Code that two families share lives here.
(``tests/test_catalog_layout.py`` holds every fix to that.)

- The patcher: ``install(patcher)`` receives a ``Patcher`` (``Patcher`` is its protocol here): ``wrap``,
  ``replace``, ``wrap_subclasses``, ``add_to_subclasses``, ``require``, ``on``, ``patch_id`` and
  ``transformers_version`` (docs/writing-a-patch.md says what each does).
- ``Drift``: raise it in ``install`` when the release lacks what the fix needs.
- ``bound_arguments``: a call's arguments by name; ``cache_argument``: the cache among them, under whichever name
  this release takes it (and a deprecated name in ``**kwargs``); ``signature``: a function's parameters, seen through a decorator
  that hides them behind ``(*args, **kwargs)`` (what ``require`` checks, and what a wrapper binds with).
- ``recorder``: how a wrapper reports the calls it sees and changes (``hf_genfix.recording()``), as its own patch.
- ``hidden_from_warnings``, ``resolve``, ``reset_in_child``, ``hold_across_fork``, ``env_name``: the core's
  mechanisms a fix needs (warnings that point at the user's line, a target's owner, locks safe across fork, the
  name of a patch's switch).
- ``warn_once``: the one ``HFGenfixWarning`` a fix gives when it changes what a call does (a slower path, a
  refused shortcut), once per patch and key in a process, naming the release and the patch's switch.
- Submodules, shared across families: ``positions`` (a ``cache_position`` relayed to an inner call),
  ``prepare_inputs`` (wrapping every model class's ``prepare_inputs_for_generation``), ``remote_code`` (what a
  trust_remote_code class is, and what it uses), ``tuple_caches`` (tuple-style caches for code written for 4.3x).

Importing this package imports neither torch nor transformers.
"""

from __future__ import annotations

import inspect
import sys
import warnings
from typing import Any, Callable, Protocol

from .. import _patcher, _record
from .._config import env_name
from .._errors import Drift, HFGenfixWarning
from .._fork import hold_across_fork, reset_in_child
from .._patcher import hidden_from_warnings, resolve, signature

__all__ = ["Drift", "Patcher", "Recorder", "bound_arguments", "cache_argument", "env_name", "hidden_from_warnings",
           "forget_warnings", "hold_across_fork", "patch_of_module", "recorder", "reset_in_child", "resolve",
           "signature", "warn_once"]


class Patcher(Protocol):
    """What ``install(patcher)`` receives (the registry's ``hf_genfix._patcher.Patcher``)."""

    patch_id: str
    transformers_version: Any

    def require(self, target: str, *params: str) -> Any: ...
    def wrap(self, target: str, wrapper: Callable[..., Any], enabled: Any = None) -> Any: ...
    def replace(self, target: str, value: Any) -> None: ...
    def wrap_subclasses(self, target: str, wrapper: Callable[..., Any], where: Any = None, hook: Any = None) -> None: ...
    def add_to_subclasses(self, target: str, attr: str, value: Any, where: Callable[[type], bool]) -> None: ...
    def on(self) -> bool: ...


def bound_arguments(func: Any, args: tuple, kwargs: dict) -> dict:
    """The call's arguments by name (keyword extras flattened), without defaults."""
    sig = signature(func)
    bound = sig.bind(*args, **kwargs).arguments
    for name, param in sig.parameters.items():
        if param.kind is inspect.Parameter.VAR_KEYWORD and name in bound:
            bound.update(bound.pop(name))
    return dict(bound)


def cache_argument(arguments: Any, keywords: tuple[str, ...]) -> Any:
    """The cache a call was handed: the first of ``keywords`` (the names releases take it under, such as
    ``past_key_values``, ``cache_params``, and ``cache`` from 5.24) that is not None among ``arguments`` (bound by
    name, as ``signature(func).bind(...).arguments`` or ``bound_arguments`` give them), then among the keyword extras
    (``arguments["kwargs"]``), where a deprecated name lands; None when the call has none."""
    extras = arguments.get("kwargs")
    for source in (arguments, extras if isinstance(extras, dict) else {}):
        for keyword in keywords:
            if source.get(keyword) is not None:
                return source[keyword]
    return None


def patch_of_module(module_name: str) -> str:
    """The id of the patch whose folder holds the module ``module_name``
    (``hf_genfix._patches.<family>.<id with _>.<module>``)."""
    parts = module_name.split(".")
    if len(parts) < 5 or parts[:2] != ["hf_genfix", "_patches"] or parts[3] == "shared":
        raise ValueError(f"{module_name} is not a module of a patch's folder (patches/<family>/<id>/)")
    return parts[3].replace("_", "-")


class Recorder:
    """Reports one patch's calls to ``hf_genfix.recording()`` (and, with ``HF_GENFIX_LOG=debug``, to the log).

    Off by default; a wrapper checks ``on`` first, so that with recording off a report costs one attribute read::

        record = recorder(__name__)          # in a patch's fix.py: the patch is the folder's
        ...
        if record.on:
            record.seen()                                      # a call went through the wrapper
        if record.on:
            record.changed("realigned %d of %d rows", n, batch)  # the wrapper changed this call, and how
        ...
        return record.through(wrapped, args, kwargs)          # or: this call is upstream's, as given

    ``unchanged()`` is not a recording: it tells the sweep's differential that the call needs no second run with
    the patch off (one global read when nobody watches).
    """

    __slots__ = ("patch_id",)

    def __init__(self, patch_id: str):
        self.patch_id = patch_id

    @property
    def on(self) -> bool:
        return _record.on

    def seen(self) -> None:
        _record.seen(self.patch_id)

    def changed(self, what: str, *args: Any) -> None:
        _record.changed(self.patch_id, what, *args)

    def unchanged(self) -> None:
        """Say that this call through the wrapper is upstream's: what it wraps was (or will be) called with the
        caller's own arguments and its answer returned as it is, nothing else changed. Once per such call, and
        only then: the sweep's differential takes the answer of a run whose every patched call said so as
        upstream's, without running it again with the patches off (``_patcher.passed_through``)."""
        _patcher.passed_through(self.patch_id)

    def through(self, wrapped: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """A wrapper's pass-through path in one line, ``return record.through(wrapped, args, kwargs)``: the wrapped
        call with the caller's own arguments, its answer as it is, and ``unchanged()`` said for it; the call and the
        word that it is upstream's cannot drift apart."""
        _patcher.passed_through(self.patch_id)
        return wrapped(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Recorder({self.patch_id!r})"


# ``through`` stands between a wrapper and what it wraps: an upstream warning with stacklevel 2 (5.24's generate()
# deprecating past_key_values) must step over its frame to name the user's line, as over the wrapper's own
# (``_patcher.hidden_from_warnings``; tests/test_warnings_attribution.py).
Recorder.through = hidden_from_warnings(Recorder.through)  # type: ignore[method-assign]


def recorder(where: str) -> Recorder:
    """The ``Recorder`` of a patch: ``recorder(__name__)`` in a module of its folder; a family's shared module,
    which serves several patches, passes the id its caller's patcher has (``recorder(patcher.patch_id)``)."""
    return Recorder(patch_of_module(where) if where.startswith("hf_genfix.") else where)


# Keys already warned about, as (patch id, key). Only ever added to (a set's add is atomic), so a race costs at most
# one repeated warning; a forked child inherits what its parent has said.
_warned: set[tuple[str, str]] = set()


def warn_once(patch_id: str, key: str, message: str, off: str = "for upstream's behaviour") -> bool:
    """Give one ``HFGenfixWarning`` per patch and ``key`` in this process, pointing at the user's line:
    ``hf_genfix: transformers <version> <message> (<switch>=off <off>)``. Returns whether it warned.

    A fix that changes what a call does in a way the user can notice (a slower path, a refused shortcut) says so
    once: the key says what "once" means (a model type, a model class). ``forget_warnings`` is for tests."""
    if (patch_id, key) in _warned:
        return False
    _warned.add((patch_id, key))
    version = getattr(sys.modules.get("transformers"), "__version__", "?")
    warnings.warn(f"hf_genfix: transformers {version} {message} ({env_name(patch_id)}=off {off})", HFGenfixWarning,
                  stacklevel=_user_stacklevel())
    return True


def forget_warnings(patch_id: str) -> None:
    """Let ``warn_once`` warn again for ``patch_id`` (for tests that check the warning)."""
    for item in [w for w in _warned if w[0] == patch_id]:
        _warned.discard(item)


def _user_stacklevel() -> int:
    """The ``stacklevel`` that makes ``warn_once``'s warning name the first frame outside hf_genfix (core and
    patches), transformers, torch (its ``no_grad`` wraps ``generate``) and wrapt: the user's line.

    Frames are told by their module's name (a patch's test file, beside its fix, is not the package). Counted as
    ``warnings`` counts: from ``warn_once``'s frame, one level per frame, stepping over the frames ``warnings``
    itself skips (the hidden wrappers, importlib's bootstrap)."""
    def skipped(frame: Any) -> bool:
        filename = frame.f_code.co_filename
        return "importlib" in filename and "_bootstrap" in filename

    def library(frame: Any) -> bool:
        return str(frame.f_globals.get("__name__", "")).partition(".")[0] in _LIBRARIES

    frame, level = sys._getframe(1), 1  # warn_once
    while frame is not None and (skipped(frame) or library(frame)):
        frame = frame.f_back
        while frame is not None and skipped(frame):
            frame = frame.f_back
        level += 1
    return level if frame is not None else 2


_LIBRARIES = frozenset({"hf_genfix", "transformers", "torch", "wrapt"})
