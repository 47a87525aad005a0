"""Installing one patch: an undo log around wrapt.

Every change a fix makes goes through a ``Patcher``. It writes on the class or module that the target names
(walking the class's own ``vars`` so a method is never bound by accident, as ``wrapt.resolve_path`` does),
remembers the exact object it displaced, and undoes in reverse order. A fix that raises half-way is rolled
back before the registry records it as ``failed``, so there is never a half-applied patch.

Every wrapper is gated per context: inside ``suppressed(ids)`` (``hf_genfix.disabled()``) the wrappers of those
patches call straight through in that thread or asyncio task, and nowhere else. The gate is a ``ContextVar``
read on each call (about 0.1 us, next to a wrapt wrapper's own ~1.7 us on this project's machines).

Wrappers pickle and deep-copy as the objects they replace do: by reference (``getattr(owner, name)``), so a
pickled ``model.generate`` unpickles to whatever ``generate`` is where it is loaded (the patched one in a process
with hf_genfix active, upstream's elsewhere).
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import inspect
import linecache
import threading
import types
import warnings
from contextvars import ContextVar
from typing import Any, Callable, Iterator

import wrapt

from . import _fork
from ._errors import Drift

_MISSING = object()


# The open disabled() blocks of this thread or task: ((patch ids | None for all, block identity), ...).
_SUPPRESSED: ContextVar[tuple] = ContextVar("hf_genfix_suppressed", default=())

# Inside ``watching()``: the ids of the patches whose switch was read (a wrapper's gate, ``Patcher.on()``,
# ``is_suppressed``), one entry per read, from any thread (``list.append`` is atomic); ``(id,)`` for a read whose
# wrapper then called straight through (``passed_through``); None when nobody watches (one global read per call).
# ``disabled()`` changes nothing but what those reads return, so a run whose every read was passed through executes
# the same code inside ``disabled()`` as outside it: the sweep's differential then needs no second run
# (``oracles.differential``).
_watch: list | None = None


def _read(patch_id: str) -> None:
    watch = _watch
    if watch is not None:
        watch.append(patch_id)


def passed_through(patch_id: str) -> None:
    """The wrapper of ``patch_id`` called what it wraps with the caller's own arguments and changed nothing else
    for this call: its gate's read changed nothing (``watching``). Call it once per such call, never otherwise:
    a declaration too many would hide a read that did change something."""
    watch = _watch
    if watch is not None:
        watch.append((patch_id,))


def is_suppressed(patch_id: str) -> bool:
    _read(patch_id or "*")
    return any(ids is None or patch_id in ids for ids, _ in _SUPPRESSED.get())


@contextlib.contextmanager
def watching() -> Iterator[set]:
    """The set of patch ids whose switch was read during the block and may have changed something (reads not
    passed through), filled when the block closes; an enclosing block sees the reads too. For the sweep's own
    process only: while it is open every patched call adds to one shared list."""
    global _watch
    outer, reads, reached = _watch, [], set()
    _watch = reads
    try:
        yield reached
    finally:
        _watch = outer
        if outer is not None:
            outer.extend(reads)
        net: dict[str, int] = {}
        for read in reads:
            if isinstance(read, tuple):
                net[read[0]] = net.get(read[0], 0) - 1
            else:
                net[read] = net.get(read, 0) + 1
        reached.update(patch_id for patch_id, n in net.items() if n > 0)


@contextlib.contextmanager
def suppressed(patch_ids: frozenset | None) -> Iterator[None]:
    """The wrappers of ``patch_ids`` (all when None) call straight through in this context for the block."""
    block = (patch_ids, object())
    _SUPPRESSED.set(_SUPPRESSED.get() + (block,))
    try:
        yield
    finally:
        # Removed by identity, not popped: blocks need not close in the order they opened (generators,
        # async generators, context managers entered by hand).
        _SUPPRESSED.set(tuple(b for b in _SUPPRESSED.get() if b is not block))


def _gate(patch_id: str, enabled: Any) -> Callable[[], bool]:
    get = _SUPPRESSED.get

    def gate() -> bool:
        _read(patch_id)
        if get() and is_suppressed(patch_id):
            return False
        return enabled() if callable(enabled) else enabled is None or bool(enabled)

    return gate


class _ModuleByName:
    """Pickles as ``importlib.import_module(name)``: a module owner of a wrapped function, by reference."""

    def __init__(self, name: str):
        self.name = name

    def __reduce__(self) -> tuple:
        return importlib.import_module, (self.name,)


class GenfixBoundWrapper(wrapt.BoundFunctionWrapper):
    """What a GenfixWrapper gives when looked up on an instance or class: pickles as a bound method does."""

    def _bound_to(self) -> Any:
        bound = getattr(self.__wrapped__, "__self__", None)  # the instance, or the class of a classmethod
        return None if bound is None or isinstance(bound, types.ModuleType) else bound

    def __reduce__(self) -> tuple:
        bound = self._bound_to()
        return getattr, (bound if bound is not None else self._self_owner, self._self_parent._self_genfix_attr)

    def __reduce_ex__(self, protocol: int) -> tuple:
        return self.__reduce__()

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: dict) -> Any:
        bound = self._bound_to()  # as copy does for a bound method: bound to a deep copy of its instance
        return self if bound is None else getattr(copy.deepcopy(bound, memo), self._self_parent._self_genfix_attr)


class GenfixWrapper(wrapt.FunctionWrapper):
    """A wrapt FunctionWrapper that knows which patch installed it, so nothing is ever wrapped twice."""

    __bound_function_wrapper__ = GenfixBoundWrapper

    def __reduce__(self) -> tuple:
        owner = self._self_genfix_owner
        return getattr, (_ModuleByName(owner.__name__) if isinstance(owner, types.ModuleType) else owner,
                         self._self_genfix_attr)

    def __reduce_ex__(self, protocol: int) -> tuple:
        return self.__reduce__()

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: dict) -> Any:
        return self  # functions are atomic to copy


def patch_of(obj: Any) -> str | None:
    """The id of the hf_genfix patch whose wrapper ``obj`` is, or None."""
    if isinstance(obj, GenfixWrapper):
        return getattr(obj, "_self_genfix_patch", None)
    return None


# wrapt 2.x's FunctionWrapper derives from BaseObjectProxy, not from ObjectProxy (which it did in 1.x).
_PROXY = getattr(wrapt, "BaseObjectProxy", wrapt.ObjectProxy)


def wrapped_by(obj: Any, patch_id: str) -> bool:
    """True when ``obj`` or anything it wraps is the wrapper of ``patch_id``."""
    seen = 0
    while obj is not None and seen < 64:
        if patch_of(obj) == patch_id:
            return True
        obj = getattr(obj, "__wrapped__", None) if isinstance(obj, _PROXY) else None
        seen += 1
    return False


def resolve(target: str) -> tuple[Any, str, Any]:
    """``"pkg.mod:Cls.attr"`` -> (owner object, attribute name, raw attribute value)."""
    module_name, _, qualname = target.partition(":")
    try:
        parent: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise Drift(f"module {module_name} cannot be imported: {exc}") from exc
    parts = qualname.split(".")
    value: Any = parent
    for i, name in enumerate(parts):
        parent = value
        value = _lookup(parent, name)
        if value is _MISSING:
            raise Drift(f"{module_name}:{'.'.join(parts[: i + 1])} does not exist")
    return parent, parts[-1], value


def _lookup(parent: Any, name: str) -> Any:
    if inspect.isclass(parent):
        for klass in inspect.getmro(parent):
            if name in vars(klass):
                return vars(klass)[name]
    return getattr(parent, name, _MISSING)


def _signature_of(value: Any) -> inspect.Signature | None:
    func = getattr(value, "__func__", value)  # classmethod / staticmethod objects
    try:
        return signature(func)
    except (TypeError, ValueError):
        return None


def signature(func: Any) -> inspect.Signature:
    """``inspect.signature(func)``, seeing through a decorator that forwards ``(*args, **kwargs)`` (or
    ``(self, *args, **kwargs)``) to the one function it closes over, without ``functools.wraps`` (5.13-5.15's
    ``force_accelerate_hooks`` on the Mamba mixers' forward hid their parameters so). A bound method's ``self`` is
    left out, as ``inspect.signature`` leaves it out; every other signature is ``inspect.signature``'s."""
    sig = inspect.signature(func)
    plain = getattr(func, "__func__", func)
    var = [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]
    kinds = [p.kind for p in inspect.signature(plain).parameters.values()] if plain is not func else \
        [p.kind for p in sig.parameters.values()]
    if kinds not in (var, [inspect.Parameter.POSITIONAL_OR_KEYWORD, *var]) or hasattr(plain, "__wrapped__"):
        return sig
    inner = [c.cell_contents for c in getattr(plain, "__closure__", None) or ()
             if inspect.isfunction(getattr(c, "cell_contents", None))]
    if len(inner) != 1:
        return sig
    found = inspect.signature(inner[0])
    if plain is not func and len(kinds) == 3:  # a bound method: its self is bound
        return found.replace(parameters=list(found.parameters.values())[1:])
    return found


class Patcher:
    """The undo log of one patch. Fix modules receive one in ``install(patcher)``."""

    def __init__(self, patch_id: str, targets: tuple[str, ...], transformers_version: Any = None):
        self.patch_id = patch_id
        self.transformers_version = transformers_version
        self._targets = frozenset(targets)
        self._undo: list[Callable[[], None]] = []
        self._changes: list[tuple[Any, str, Any]] = []
        self._lock = _fork.reset_in_child(threading.RLock())

    # -- what fixes call ------------------------------------------------------------------------------------
    def require(self, target: str, *params: str) -> Any:
        """The target's raw value; ``Drift`` when it is missing or its signature lacks ``params``."""
        self._declared(target)
        _, _, value = resolve(target)
        if params:
            sig = _signature_of(value)
            names = set(sig.parameters) if sig is not None else set()
            has_var_kw = sig is not None and any(
                p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()
            )
            lacking = [p for p in params if p not in names and not (p.startswith("**") and has_var_kw)]
            if lacking:
                raise Drift(f"{target} has no parameter(s) {', '.join(lacking)} (signature {sig})")
        return value

    def wrap(self, target: str, wrapper: Callable[..., Any], enabled: Any = None) -> GenfixWrapper:
        """Wrap ``target`` in place with ``wrapper(wrapped, instance, args, kwargs)``."""
        self._declared(target)
        parent, attr, value = resolve(target)
        return self._wrap_on(parent, attr, value, wrapper, enabled)

    def replace(self, target: str, value: Any) -> None:
        """Set ``target`` to ``value`` (restored by revert). ``disabled()`` switches wrappers, not replaced values:
        a replaced value that corrects behaviour checks ``self.on()`` itself."""
        self._declared(target)
        parent, attr, _ = resolve(target)
        self._set(parent, attr, value)

    def add(self, target: str, attr: str, value: Any) -> None:
        """Give the class or module ``target`` an attribute ``attr`` that this release lacks (taken off by revert);
        ``Drift`` when it has one."""
        self._declared(target)
        _, _, owner = resolve(target)
        if _lookup(owner, attr) is not _MISSING:
            raise Drift(f"{target}.{attr} exists: nothing to add")
        self._set(owner, attr, value)

    def on(self) -> bool:
        """Whether this patch is in effect for the calling thread or task (False inside its ``disabled()``)."""
        _read(self.patch_id)
        return not (_SUPPRESSED.get() and is_suppressed(self.patch_id))

    def wrap_subclasses(
        self,
        target: str,
        wrapper: Callable[..., Any],
        where: Callable[[type], bool] | None = None,
        hook: str | None = None,
    ) -> None:
        """Wrap ``Base.attr`` and every subclass's own ``attr``, including subclasses created later.

        Later subclasses are caught by an ``__init_subclass__`` installed on ``hook`` (a "module:Class" target,
        default ``Base``): pick a class that every subclass of interest inherits from early in its MRO.
        """
        self._declared(target)
        base, attr, _ = resolve(target)
        if not inspect.isclass(base):
            raise Drift(f"{target}: {base!r} is not a class")
        accept = where or (lambda cls: True)

        def cover(cls: type) -> None:
            own = vars(cls).get(attr, _MISSING)
            if own is _MISSING:
                return
            if wrapped_by(own, self.patch_id):
                if not any(owner is cls and name == attr for owner, name, _ in self._changes):
                    # A class built from a copy of a wrapped class's __dict__ (transformers does this for
                    # remote-code models) carries our wrapper without our record of it: adopt it, so that
                    # revert() takes it off there too.
                    self._adopt(cls, attr)
                return
            if accept(cls):
                self._wrap_on(cls, attr, own, wrapper, None)

        for cls in _all_subclasses(base, include_self=True):
            cover(cls)

        if hook is not None:
            self._declared(hook)
            _, _, hook_cls = resolve(hook)
        else:
            hook_cls = base
        self._on_new_subclasses(base, hook_cls, cover)

    def add_to_subclasses(self, target: str, attr: str, value: Any, where: Callable[[type], bool]) -> None:
        """Give ``attr = value`` to each subclass of the class ``target`` that ``where`` accepts, now and as later
        ones are created, instead of to ``target`` itself, whose other subclasses then never reach it (a
        ``__getattr__`` for remote-code configurations only). A subclass that has ``attr`` below ``target`` in its
        MRO (its own, or ours through a covered parent) keeps it."""
        self._declared(target)
        _, _, base = resolve(target)
        if not inspect.isclass(base):
            raise Drift(f"{target}: {base!r} is not a class")

        def cover(cls: type) -> None:
            below = cls.__mro__[:cls.__mro__.index(base)] if base in cls.__mro__ else ()
            if cls is not base and not any(attr in vars(c) for c in below) and where(cls):
                self._set(cls, attr, value)

        for cls in _all_subclasses(base):
            cover(cls)
        self._on_new_subclasses(base, base, cover, key=(target, attr))

    def _on_new_subclasses(self, base: type, hook_cls: type, cover: Callable[[type], None], key: Any = None) -> None:
        """``cover(cls)`` for each subclass of ``base`` created from now on (an ``__init_subclass__`` on
        ``hook_cls``, chained to the one it had). When the fix runs again after a reload, the hook it installed is
        kept: any hook of this patch (``wrap_subclasses``), or the one of the same ``key``."""
        previous = vars(hook_cls).get("__init_subclass__", _MISSING)
        hook = previous
        while hook is not _MISSING and self._installed(hook_cls, "__init_subclass__", hook):
            if key is None or getattr(hook.__func__, "_genfix_key", None) == key:
                return
            hook = getattr(hook.__func__, "_genfix_previous", _MISSING)

        def __init_subclass__(cls: type, **kwargs: Any) -> None:
            if previous is _MISSING:
                super(hook_cls, cls).__init_subclass__(**kwargs)
            else:
                previous.__get__(None, cls)(**kwargs)
            if issubclass(cls, base):
                with self._lock:
                    cover(cls)

        __init_subclass__._genfix_key, __init_subclass__._genfix_previous = key, previous  # type: ignore[attr-defined]
        self._set(hook_cls, "__init_subclass__", classmethod(__init_subclass__))

    # -- what the registry calls ----------------------------------------------------------------------------
    def undo(self) -> None:
        with self._lock:
            while self._undo:
                self._undo.pop()()

    @property
    def changes(self) -> list[tuple[Any, str, Any]]:
        """(owner, attribute, installed object) for everything this patch currently has in place."""
        return list(self._changes)

    # -- internals ------------------------------------------------------------------------------------------
    def _declared(self, target: str) -> None:
        if target not in self._targets:
            raise ValueError(
                f"patch {self.patch_id!r} touches {target}, which its manifest does not list in targets"
            )

    def _wrap_on(self, parent: Any, attr: str, value: Any, wrapper: Callable, enabled: Any) -> GenfixWrapper:
        if wrapped_by(value, self.patch_id):
            if self._installed(parent, attr, value):
                return value  # the fix runs again after a reload: what did not change stays as it is
            raise RuntimeError(f"{parent!r}.{attr} is already wrapped by patch {self.patch_id!r}")
        proxy = GenfixWrapper(value, hidden_from_warnings(wrapper), enabled=_gate(self.patch_id, enabled))
        proxy._self_genfix_patch = self.patch_id
        proxy._self_genfix_owner = parent
        proxy._self_genfix_attr = attr
        self._set(parent, attr, proxy)
        return proxy

    def _installed(self, parent: Any, attr: str, value: Any) -> bool:
        """Whether ``value`` (or a wrapper stacked on it by a later patch) is what this patcher put there."""
        ours = [v for o, a, v in self._changes if o is parent and a == attr]
        for _ in range(64):
            if any(value is v for v in ours):
                return True
            value = getattr(value, "__wrapped__", None) if isinstance(value, _PROXY) else None
        return False

    def _adopt(self, owner: type, attr: str) -> None:
        change = (owner, attr, vars(owner)[attr])

        def undo() -> None:
            self._changes.remove(change)
            current = vars(owner).get(attr, _MISSING)
            if patch_of(current) == self.patch_id:
                setattr(owner, attr, current.__wrapped__)

        self._changes.append(change)
        self._undo.append(undo)

    def _set(self, parent: Any, attr: str, new: Any) -> None:
        own = vars(parent) if hasattr(parent, "__dict__") else {}
        previous = own.get(attr, _MISSING)

        change = (parent, attr, new)

        def undo() -> None:
            self._changes.remove(change)
            current = vars(parent).get(attr, _MISSING)
            if current is not new:
                # Somebody replaced our object after us; putting the original back would discard their change.
                warnings.warn(
                    f"hf_genfix: {getattr(parent, '__qualname__', parent)!r}.{attr} was replaced after patch "
                    f"{self.patch_id!r} installed it; leaving the newer object in place",
                    stacklevel=3,
                )
                return
            if previous is _MISSING:
                delattr(parent, attr)
            else:
                setattr(parent, attr, previous)

        setattr(parent, attr, new)
        self._changes.append(change)
        self._undo.append(undo)


# An upstream warning with stacklevel > 1 names the frame that called upstream code; through a patch that is the
# wrapper's frame, not the user's line. CPython's warnings (the C and the Python implementation alike) skip frames
# whose code filename contains "importlib" and "_bootstrap" while counting stacklevel, so each installed wrapper is
# a copy of the fix's function whose code carries that marker: no cost per call, no global state touched, and
# warnings raised by a fix itself (an internal frame) count frames plainly, as before.
_HIDDEN = " (hf_genfix wrapper: skipped by warnings like importlib._bootstrap)"


def hidden_from_warnings(func: Any) -> Any:
    """A copy of the function ``func`` that ``warnings.warn(..., stacklevel>1)`` steps over; other callables
    unchanged."""
    if not isinstance(func, types.FunctionType) or func.__code__.co_filename.endswith(_HIDDEN):
        return func
    filename = func.__code__.co_filename + _HIDDEN
    clone = types.FunctionType(_marked(func.__code__, filename), func.__globals__, func.__name__,
                               func.__defaults__, func.__closure__)
    clone.__kwdefaults__ = func.__kwdefaults__
    clone.__qualname__ = func.__qualname__
    clone.__doc__ = func.__doc__
    clone.__dict__.update(func.__dict__)
    # Tracebacks and inspect still show the fix's source lines: served from its module's loader.
    # Loaded now with no mtime, which linecache.checkcache() never invalidates: a lazy entry is dropped by
    # inspect.getsource() for a file name that is not on disk (seen with wheel installs).
    lines = linecache.getlines(func.__code__.co_filename, func.__globals__)
    if lines:
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
    return clone


def _marked(code: types.CodeType, filename: str) -> types.CodeType:
    consts = tuple(_marked(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _all_subclasses(cls: type, include_self: bool = False) -> list[type]:
    out, stack, seen = ([cls] if include_self else []), [cls], {cls}
    while stack:
        for sub in type.__subclasses__(stack.pop()):
            if sub not in seen:
                seen.add(sub)
                out.append(sub)
                stack.append(sub)
    return out
