"""The patch registry: which patches exist, what state each is in, and the import hooks that decide.

A decision is taken when a patch's target modules are imported (or already were), never earlier, and its
state records what actually happened. The registry keeps a stack of installed patches; bringing the process to
the wanted set (``_reconcile``) only ever pops from the top of that stack, so patches that wrap the same
object unwind in the reverse order they were stacked and ``revert()`` gives back the identical originals.

``revert()``/``activate()`` and ``forced()`` change what is installed, for the whole process; ``disabled()``
installs and removes nothing: it switches wrappers off in the calling thread or asyncio task only
(``_patcher.suppressed``).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from . import _fork, _hooks
from ._config import Config, env_name
from ._manifest import Manifest, in_range, load_object, parse_version as _parse_version
from ._errors import Drift, HFGenfixWarning, PatchError
from ._patcher import Patcher, is_suppressed, resolve, suppressed
from .catalog import PatchStatus

log = logging.getLogger("hf_genfix")

APPLIED, FORCED, NOT_NEEDED, DISABLED, PENDING, DRIFT, FAILED = (
    "applied", "forced", "not-needed", "disabled", "pending", "drift", "failed",
)
# Decided to install, hooked, waiting for a target module: installed as that module's import completes.
ARMED = "armed"
INSTALLED = (APPLIED, FORCED)


@dataclass
class _Entry:
    manifest: Manifest
    state: str = PENDING
    reason: str = ""
    patcher: Patcher | None = None
    sticky: tuple[str, str] | None = None  # (drift | failed, why): decided once per process
    events: list[str] = field(default_factory=list)


def transformers_version() -> str | None:
    """The version of the transformers imported in this process (None while it is not imported)."""
    mod = sys.modules.get("transformers")
    if mod is None:
        return None
    version = getattr(mod, "__version__", None)
    if version:
        return str(version)
    try:  # a transformers still executing its __init__ may not have set __version__ yet
        from importlib.metadata import PackageNotFoundError, version as dist_version

        return dist_version("transformers")
    except PackageNotFoundError:
        return None


class Registry:
    def __init__(self, manifests: Sequence[Manifest], config: Config):
        self.config = config
        self._entries = {m.id: _Entry(m) for m in manifests}
        self._stack: list[str] = []
        self._forcing: list[list[str]] = []  # one list per open forced() block, removed by identity on exit
        self._active = False
        self._found: set[str] = set()  # target modules the installed transformers has
        self._warned_version: str | None = None
        self._summarised = False  # the one INFO line is said
        self._lock = threading.RLock()
        self._forcing_threads: dict[int, int] = {}  # id(block) -> the thread that opened it
        _fork.hold_across_fork(self._lock, self._after_fork_in_child)
        for entry in self._entries.values():
            if not config.enabled:
                entry.state, entry.reason = DISABLED, config.off_reason()
            elif config.toggle(entry.manifest.id) == "off":
                entry.state, entry.reason = DISABLED, f"{env_name(entry.manifest.id)}=off"
            else:
                entry.reason = "waiting for " + " and ".join(entry.manifest.target_modules)

    # -- activation -----------------------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self._active

    def activate(self, trigger: str = "activate()") -> None:
        """Decide every patch now and on every later import of a target module (idempotent)."""
        with self._lock:
            if self._active:
                return
            self._active = True
            if not self.config.enabled:
                return
            # transformers too: its import tells the version every decision needs
            targets = [m for e in self._entries.values() for m in e.manifest.target_modules]
            _hooks.watch(["transformers", *targets], self)
            self._reconcile(trigger=trigger)

    def revert(self) -> None:
        """Put every original back and stop reacting to imports."""
        with self._lock:
            self._active = False
            self._reconcile(trigger="revert()")

    def on_import(self, name: str) -> None:
        """A watched module has just been executed: imported, imported again after a failed import, reloaded."""
        with self._lock:
            if self._active or self._forcing:
                self._reapply(name)
                self._reconcile(trigger=name)

    def _reapply(self, name: str) -> None:
        # An installed patch whose target module runs again (importlib.reload) has its wrappers on the
        # module's previous objects only. Its fix runs again on the same undo log, bottom of the stack first
        # so that stacked wrappers keep their order: the new objects get wrapped, the old ones (which
        # existing instances and subclasses still use) stay wrapped, revert() undoes both.
        for pid in list(self._stack):
            entry = self._entries[pid]
            if name in entry.manifest.target_modules and entry.sticky is None:
                failure = self._run_fix(entry.manifest, entry.patcher)
                if failure is not None:
                    # _reconcile now takes it (and whatever is stacked above it) off.
                    self._skip(entry, *failure, transformers_version())

    def _check_known(self, patch_ids: Sequence[str]) -> None:
        unknown = [p for p in patch_ids if p not in self._entries]
        if unknown:
            import difflib

            hints = [difflib.get_close_matches(p, list(self._entries), n=1) for p in unknown]
            hint = "; did you mean " + ", ".join(h[0] for h in hints if h) + "?" if any(hints) else ""
            raise KeyError(f"unknown hf_genfix patch id(s) {', '.join(unknown)}{hint} "
                           f"Known: {', '.join(sorted(self._entries))}")

    def disabled(self, *patch_ids: str) -> contextlib.AbstractContextManager[None]:
        """The patches (all when none is named) behave as upstream in this thread or asyncio task only."""
        self._check_known(patch_ids)
        return suppressed(frozenset(patch_ids) if patch_ids else None)

    @contextlib.contextmanager
    def forced(self, *patch_ids: str) -> Iterator[None]:
        """Install the given patches for the block even where the installed release is not affected (also after
        ``revert()``, under ``HF_GENFIX=off`` or a per-patch ``off``), for the whole process."""
        self._check_known(patch_ids)
        block = list(patch_ids)
        with self._lock:
            self._forcing.append(block)
            self._forcing_threads[id(block)] = threading.get_ident()
            self._reconcile(trigger="forced()")
        try:
            yield
        finally:
            with self._lock:
                # By identity: blocks of other threads or tasks may have opened after this one and still be open.
                self._forcing[:] = [b for b in self._forcing if b is not block]
                self._forcing_threads.pop(id(block), None)
                self._reconcile(trigger="forced() exit")

    def _after_fork_in_child(self) -> None:
        # Only the forking thread lives on in a child: the forced() blocks other threads had open can never
        # close there, so the patches they forced come off as those blocks would have taken them off.
        here = threading.get_ident()
        gone = [b for b in self._forcing if self._forcing_threads.get(id(b), here) != here]
        if gone:
            self._forcing[:] = [b for b in self._forcing if all(b is not g for g in gone)]
            for block in gone:
                self._forcing_threads.pop(id(block), None)
            try:
                self._reconcile(trigger="fork")
            except Exception as exc:  # noqa: BLE001 - a child must not die in an at-fork hook
                log.debug("hf_genfix: after fork, reconciling failed: %s", exc)

    # -- status ---------------------------------------------------------------------------------------------
    def status(self) -> list[PatchStatus]:
        """The state of every patch, as the calling thread or task sees it (``disabled()`` is per context)."""
        version = transformers_version()
        off = {e.manifest.id for e in self._entries.values()
               if e.state in INSTALLED + (PENDING, ARMED) and is_suppressed(e.manifest.id)}
        return [
            PatchStatus(
                id=e.manifest.id,
                state=DISABLED if e.manifest.id in off else e.state,
                reason="inside hf_genfix.disabled() in this thread or task" if e.manifest.id in off else e.reason,
                summary=e.manifest.summary,
                family=e.manifest.family,
                targets=e.manifest.targets,
                affected=e.manifest.affected,
                fixed_upstream=e.manifest.fixed_upstream,
                transformers_version=version,
                toggle=self.config.toggle(e.manifest.id) if self.config.enabled else "off",
            )
            for e in self._entries.values()
        ]

    def installed(self, patch_id: str) -> list[tuple[Any, str, Any]]:
        """(owner, attribute, installed object) for each change the patch has in place now."""
        patcher = self._entries[patch_id].patcher
        return patcher.changes if patcher is not None else []

    def manifests(self) -> list[Manifest]:
        return [e.manifest for e in self._entries.values()]

    # -- deciding -------------------------------------------------------------------------------------------
    def _wanted(self, entry: _Entry, version: str | None, trigger: str = "") -> tuple[bool, str, str]:
        """(install?, state if not installed or state to record when installed, reason)."""
        m = entry.manifest
        forced = any(m.id in block for block in self._forcing)
        toggle = "on" if forced else self.config.toggle(m.id)
        if not self.config.enabled and not forced:
            return False, DISABLED, self.config.off_reason()
        if toggle == "off":
            return False, DISABLED, f"{env_name(m.id)}=off"
        if version is None:
            return False, PENDING, "waiting for transformers to be imported"
        affected = in_range(m.affected, version)
        outside = f"is outside {m.affected}" if affected is not None else "is not a PEP 440 version"
        if not affected and toggle != "on":
            return False, NOT_NEEDED, f"transformers {version} {outside}"
        if not self._active and not forced:
            return False, DISABLED, "reverted by hf_genfix.revert()"
        if entry.sticky:
            return False, *entry.sticky
        waiting = [mod for mod in m.target_modules if not _imported(mod, trigger)]
        missing = [mod for mod in waiting if not self._findable(mod, trigger)]
        if missing:
            return False, DRIFT, f"module {' and '.join(missing)} does not exist in transformers {version}"
        if waiting:
            return False, ARMED, "installs when " + " and ".join(waiting) + " " + (
                "is" if len(waiting) == 1 else "are") + " imported"
        if affected:
            return True, APPLIED, f"transformers {version} is inside {m.affected}"
        return True, FORCED, f"{env_name(m.id)}=on although transformers {version} {outside}"

    def _findable(self, module: str, trigger: str) -> bool:
        """Whether the installed transformers has ``module``: decided once transformers itself is imported
        (until then every target is just pending), from the files, without executing the module or its
        parent packages (transformers' lazy __init__ files are not cheap)."""
        if module not in self._found:
            if not _imported("transformers", trigger):
                return True
            if not _exists(module):
                return False  # not remembered: strict mode asks again on the next import
            self._found.add(module)
        return True

    def _reconcile(self, trigger: str) -> None:
        with self._lock:
            version = transformers_version()
            self._warn_unknown_version(version)
            wants = {pid: self._wanted(e, version, trigger) for pid, e in self._entries.items()}
            keep = 0
            while keep < len(self._stack) and wants[self._stack[keep]][0]:
                keep += 1
            for pid in reversed(self._stack[keep:]):
                entry = self._entries[pid]
                assert entry.patcher is not None
                entry.patcher.undo()
                entry.patcher = None
                log.debug("hf_genfix: removed %s (%s)", pid, trigger)
            del self._stack[keep:]
            changed: list[str] = []
            for pid, entry in self._entries.items():
                install, state, reason = wants[pid]
                if pid in self._stack:
                    entry.state, entry.reason = state, reason
                    continue
                if install:
                    state, reason = self._install(entry, version, state, reason)
                elif state == DRIFT and entry.sticky is None:
                    state, reason = self._skip(entry, state, reason, version)
                if (state, reason) != (entry.state, entry.reason):
                    changed.append(pid)
                entry.state, entry.reason = state, reason
            if changed and trigger not in ("forced()", "forced() exit"):
                self._summarise(version, trigger, changed)
            self._raise_if_strict(version)

    def _install(self, entry: _Entry, version: str | None, state: str, reason: str) -> tuple[str, str]:
        m = entry.manifest
        patcher = Patcher(m.id, m.targets, _parse_version(version))
        failure = self._run_fix(m, patcher)
        if failure is not None:
            patcher.undo()
            return self._skip(entry, *failure, version)
        entry.patcher = patcher
        self._stack.append(m.id)
        log.debug("hf_genfix: installed %s (%s)", m.id, reason)
        return state, reason

    @staticmethod
    def _run_fix(m: Manifest, patcher: Any) -> tuple[str, str] | None:
        """Run the fix's install(patcher); (drift | failed, why) when it could not, else None."""
        try:
            for target in m.targets:
                resolve(target)
            load_object(m.fix)(patcher)  # type: ignore[operator]
        except Drift as exc:
            return DRIFT, f"{exc}"
        except Exception as exc:  # noqa: BLE001 - any failure of a fix must not take the user's import down
            return FAILED, f"{type(exc).__name__}: {exc}"
        return None

    def _skip(self, entry: _Entry, state: str, why: str, version: str | None) -> tuple[str, str]:
        entry.sticky = (state, why)
        if not self.config.strict:
            warnings.warn(f"{_skipped(entry, version)}; set {env_name(entry.manifest.id)}=off to silence",
                          HFGenfixWarning, stacklevel=_user_stacklevel())
        return state, why

    def _raise_if_strict(self, version: str | None) -> None:
        # Strict: the import that met the drift fails (importlib then drops the half-imported module), and
        # nothing is remembered, so every later attempt to import it decides again and raises again until the
        # environment changes.
        skipped = [e for e in self._entries.values() if e.sticky is not None] if self.config.strict else []
        if skipped:
            message = "; ".join(_skipped(e, version) for e in skipped)
            for entry in skipped:
                entry.sticky = None
            raise PatchError(message + " (HF_GENFIX_STRICT=1)")

    def _warn_unknown_version(self, version: str | None) -> None:
        if version is None or version == self._warned_version:
            return
        self._warned_version = version
        if _parse_version(version) is not None:
            from .catalog import warn_if_unverified

            warn_if_unverified(version)
            return
        warnings.warn(
            f"hf_genfix: transformers reports version {version!r}, which is not a PEP 440 version: hf_genfix "
            f"cannot tell which defects it has and installs no patch; force the ones you know it needs with "
            f"HF_GENFIX_<ID>=on (see hf-genfix list)",
            HFGenfixWarning, stacklevel=_user_stacklevel(),
        )

    def _summarise(self, version: str | None, trigger: str, changed: list[str]) -> None:
        if version is not None and not self._summarised and log.isEnabledFor(logging.INFO):
            # HF_GENFIX_LOG=info: one line per process; the decisions as each target module is imported are DEBUG
            from .catalog import summary_line

            self._summarised = True
            log.info("%s", summary_line(version, [e.state for e in self._entries.values()]))
        if not log.isEnabledFor(logging.DEBUG):
            return
        by_state: dict[str, list[str]] = {}
        for pid in changed:
            if self._entries[pid].state not in (PENDING, ARMED):  # still waiting: said once it is installed
                by_state.setdefault(self._entries[pid].state, []).append(pid)
        if not by_state:
            return
        parts = [f"{state}: {', '.join(ids)}" for state, ids in sorted(by_state.items())]
        log.debug("hf_genfix on transformers %s (import of %s): %s", version, trigger, "; ".join(parts))


def _skipped(entry: _Entry, version: str | None) -> str:
    m, (state, why) = entry.manifest, entry.sticky or ("?", "?")
    return f"hf_genfix: patch {m.id!r} not installed ({state}) on transformers {version}: " \
           f"targets {', '.join(m.targets)}: {why}"


def _imported(name: str, trigger: str) -> bool:
    """Whether module ``name`` has finished executing. A module still initializing (another hook fired while it
    was importing, e.g. tokenization_auto importing generation.utils on 5.0) lacks its later attributes; its own
    hook (``trigger``) runs once its body is done, while importlib still marks it initializing."""
    module = sys.modules.get(name)
    if module is None:
        return False
    return name == trigger or not getattr(getattr(module, "__spec__", None), "_initializing", False)


def _exists(module: str) -> bool:
    from importlib.machinery import PathFinder

    path = None
    parts = module.split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        loaded = sys.modules.get(name)
        spec = getattr(loaded, "__spec__", None) if loaded is not None else PathFinder.find_spec(name, path)
        if loaded is not None and spec is None:
            return True  # a module put in sys.modules by hand: not ours to judge
        if spec is None:
            return False
        path = spec.submodule_search_locations
        if path is None and i < len(parts):
            return False
    return True


# Frames a warning must not point at: hf_genfix itself and the import machinery between the user's import
# statement and the hook (importlib, transformers' lazy modules).
_MACHINERY = (
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
    os.path.dirname(importlib.__file__) + os.sep,
    "<frozen importlib",
    os.sep + os.path.join("transformers", "utils", "import_utils.py"),
)


def _user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning issued by our caller point at the user's line."""
    frame, level = sys._getframe(1), 1
    while frame is not None and any(m in frame.f_code.co_filename for m in _MACHINERY):
        frame = frame.f_back
        # warnings steps over importlib's bootstrap frames without counting them
        while frame is not None and "importlib" in frame.f_code.co_filename and \
                "_bootstrap" in frame.f_code.co_filename:
            frame = frame.f_back
        level += 1
    return level
