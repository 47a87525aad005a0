"""The patch registry: which patches exist, what state each is in, and the post-import hooks that decide.

A decision is taken when a patch's target modules are imported (or already were), never earlier, and its
state records what actually happened. The registry keeps a stack of installed patches; bringing the process to
the wanted set (``_reconcile``) only ever pops from the top of that stack, so patches that wrap the same
object unwind in the reverse order they were stacked and ``revert()`` gives back the identical originals.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import sys
import threading
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator, Mapping, Sequence

import wrapt

from ._config import Config, env_name
from ._manifest import Manifest, load_dir
from ._errors import Drift, HFGenfixWarning, PatchError
from ._patcher import Patcher, resolve

log = logging.getLogger("hf_genfix")

APPLIED, FORCED, NOT_NEEDED, DISABLED, PENDING, DRIFT, FAILED = (
    "applied", "forced", "not-needed", "disabled", "pending", "drift", "failed",
)
# Decided to install, hooked, waiting for a target module: installed as that module's import completes.
ARMED = "armed"
INSTALLED = (APPLIED, FORCED)


@dataclass(frozen=True)
class PatchStatus:
    """One patch as this process has it: what ``hf_genfix.status()`` returns, one per known patch.

    Fields: ``id``; ``state`` (below); ``reason`` (why, in words: for ``armed`` the modules whose import installs
    it); ``summary``; ``family``; ``targets`` (the ``module:qualname`` objects the fix wraps); ``affected`` (the
    transformers releases with the defect); ``fixed_upstream``; ``transformers_version`` (None while transformers
    is not imported); ``toggle`` (auto / on / off, from ``HF_GENFIX_<ID>``); ``calls_seen`` and ``calls_changed``
    (calls through the patch, and those it changed, while recording was on: ``hf_genfix.recording()``).

    States, and what each means for your outputs:

    - ``applied``: this release has the defect and the fix is installed: calls reach the corrected code.
    - ``armed``: this release has the defect and the fix will be installed when the module named in ``reason`` is
      imported, as that import completes, before any of its code can be called; until then nothing is changed.
      (Should the module then lack what the fix needs, the state becomes ``drift``, with a warning.)
    - ``pending``: not decided yet: transformers is not imported. Nothing is changed.
    - ``not-needed``: this release is outside the affected range: nothing is installed, upstream is right here.
    - ``forced``: installed outside its range by ``HF_GENFIX_<ID>=on`` or ``hf_genfix.forced()``.
    - ``disabled``: switched off (``HF_GENFIX=off``, ``HF_GENFIX_<ID>=off``, ``revert()``, inside ``disabled()``):
      you get upstream's outputs, defect included.
    - ``drift``: the installed transformers lacks what the fix needs: not installed (one ``HFGenfixWarning``);
      upstream's outputs, defect included.
    - ``failed``: the fix raised while installing and was rolled back (one ``HFGenfixWarning``); upstream's outputs.
    """

    id: str
    state: str
    reason: str
    summary: str
    family: str
    targets: tuple[str, ...]
    affected: str
    fixed_upstream: Mapping[str, str]
    transformers_version: str | None
    toggle: str
    calls_seen: int = 0  # calls through the patch while recording was on (hf_genfix.recording(), LOG=debug)
    calls_changed: int = 0  # of those, the calls the patch changed

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["targets"] = list(self.targets)
        d["fixed_upstream"] = dict(self.fixed_upstream)
        return d


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


def in_range(specifier: str, version: str) -> bool:
    """Whether ``version`` is inside ``specifier``, gating pre-releases, dev and local builds by release number.

    A release candidate, a development snapshot or a local build of X is treated as X: they carry (or are about
    to carry) X's code, and the specifiers in patches/ name releases.
    """
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    return SpecifierSet(specifier).contains(Version(Version(version).base_version), prereleases=True)


class Registry:
    def __init__(self, manifests: Sequence[Manifest], config: Config):
        self.config = config
        self._entries = {m.id: _Entry(m) for m in manifests}
        self._stack: list[str] = []
        self._suppressed: list[set[str]] = []
        self._active = False
        self._epoch = 0
        self._hooks: list[tuple[str, Any]] = []
        self._lock = threading.RLock()
        for entry in self._entries.values():
            if not config.enabled:
                entry.state, entry.reason = DISABLED, "HF_GENFIX=off"
            elif config.toggle(entry.manifest.id) == "off":
                entry.state, entry.reason = DISABLED, f"{env_name(entry.manifest.id)}=off"
            else:
                entry.reason = "waiting for " + " and ".join(entry.manifest.target_modules)

    # -- activation -----------------------------------------------------------------------------------------
    def activate(self) -> None:
        """Register the post-import hooks (idempotent); hooks fire at once for modules already imported."""
        with self._lock:
            if self._active:
                return
            self._active = True
            self._epoch += 1
            epoch = self._epoch
        if not self.config.enabled:
            return
        modules = ["transformers"] + [
            m for e in self._entries.values() for m in e.manifest.target_modules
        ]
        for name in dict.fromkeys(modules):
            hook = self._hook(epoch)
            self._hooks.append((name, hook))
            wrapt.register_post_import_hook(hook, name)

    def _hook(self, epoch: int):
        def on_import(module: Any) -> None:
            # A hook registered before revert() stays in wrapt's table; the epoch makes it inert.
            if epoch == self._epoch and self._active:
                self._reconcile(trigger=getattr(module, "__name__", "?"))

        return on_import

    def revert(self) -> None:
        """Put every original back and stop reacting to imports."""
        with self._lock:
            self._active = False
            self._epoch += 1
            self._reconcile(trigger="revert()")
            self._unregister_hooks()

    def _unregister_hooks(self) -> None:
        # wrapt has no public way to remove a post-import hook; the epoch already makes ours inert, and
        # taking them out of wrapt's table keeps a thousand revert/activate cycles from piling them up.
        table = getattr(getattr(wrapt, "importer", None), "_post_import_hooks", None)
        for name, hook in self._hooks:
            pending = table.get(name) if isinstance(table, dict) else None
            if pending and hook in pending:
                pending.remove(hook)
        self._hooks.clear()

    def _check_known(self, patch_ids: Sequence[str]) -> None:
        unknown = [p for p in patch_ids if p not in self._entries]
        if unknown:
            import difflib

            hints = [difflib.get_close_matches(p, list(self._entries), n=1) for p in unknown]
            hint = "; did you mean " + ", ".join(h[0] for h in hints if h) + "?" if any(hints) else ""
            raise KeyError(f"unknown hf_genfix patch id(s) {', '.join(unknown)}{hint} "
                           f"Known: {', '.join(sorted(self._entries))}")

    @contextlib.contextmanager
    def disabled(self, *patch_ids: str) -> Iterator[None]:
        self._check_known(patch_ids)
        with self._lock:
            self._suppressed.append(set(patch_ids) or set(self._entries))
            self._reconcile(trigger="disabled()")
        try:
            yield
        finally:
            with self._lock:
                self._suppressed.pop()
                self._reconcile(trigger="disabled() exit")

    @contextlib.contextmanager
    def forced(self, *patch_ids: str) -> Iterator[None]:
        """Install the given patches for the block even where the installed release is not affected."""
        self._check_known(patch_ids)
        with self._lock:
            previous = self.config
            toggles = dict(previous.toggles, **{p: "on" for p in patch_ids})
            self.config = Config(True, previous.strict, previous.log_level, toggles)
            was_active, self._active = self._active, True
            self._reconcile(trigger="forced()")
        try:
            yield
        finally:
            with self._lock:
                self.config, self._active = previous, was_active
                self._reconcile(trigger="forced() exit")

    # -- status ---------------------------------------------------------------------------------------------
    def status(self) -> list[PatchStatus]:
        version = transformers_version()
        return [
            PatchStatus(
                id=e.manifest.id,
                state=e.state,
                reason=e.reason,
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
        toggle = self.config.toggle(m.id)
        if not self.config.enabled:
            return False, DISABLED, "HF_GENFIX=off"
        if toggle == "off":
            return False, DISABLED, f"{env_name(m.id)}=off"
        if version is None:
            return False, PENDING, "waiting for transformers to be imported"
        affected = in_range(m.affected, version)
        if not affected and toggle != "on":
            return False, NOT_NEEDED, f"transformers {version} is outside {m.affected}"
        if not self._active:
            return False, DISABLED, "reverted by hf_genfix.revert()"
        if any(m.id in s for s in self._suppressed):
            return False, DISABLED, "inside hf_genfix.disabled()"
        waiting = [mod for mod in m.target_modules if not _imported(mod, trigger)]
        if waiting:
            return False, ARMED, "installs when " + " and ".join(waiting) + " " + (
                "is" if len(waiting) == 1 else "are") + " imported"
        if entry.sticky:
            return False, *entry.sticky
        if affected:
            return True, APPLIED, f"transformers {version} is inside {m.affected}"
        return True, FORCED, f"{env_name(m.id)}=on although transformers {version} is outside {m.affected}"

    def _reconcile(self, trigger: str) -> None:
        with self._lock:
            version = transformers_version()
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
                if (state, reason) != (entry.state, entry.reason):
                    changed.append(pid)
                entry.state, entry.reason = state, reason
            if changed and trigger not in ("disabled()", "disabled() exit", "forced()", "forced() exit"):
                self._summarise(version, trigger, changed)

    def _install(self, entry: _Entry, version: str | None, state: str, reason: str) -> tuple[str, str]:
        m = entry.manifest
        patcher = Patcher(m.id, m.targets, _parse_version(version))
        try:
            for target in m.targets:
                resolve(target)
            module_name, _, func = m.fix.partition(":")
            getattr(importlib.import_module(module_name), func)(patcher)
        except Drift as exc:
            patcher.undo()
            return self._skip(entry, DRIFT, f"{exc}", version)
        except Exception as exc:  # noqa: BLE001 - any failure of a fix must not take the user's import down
            patcher.undo()
            return self._skip(entry, FAILED, f"{type(exc).__name__}: {exc}", version)
        entry.patcher = patcher
        self._stack.append(m.id)
        log.debug("hf_genfix: installed %s (%s)", m.id, reason)
        return state, reason

    def _skip(self, entry: _Entry, state: str, why: str, version: str | None) -> tuple[str, str]:
        entry.sticky = (state, why)
        m = entry.manifest
        message = (
            f"hf_genfix: patch {m.id!r} not installed ({state}) on transformers {version}: "
            f"targets {', '.join(m.targets)}: {why}"
        )
        if self.config.strict:
            entry.state, entry.reason = state, why
            raise PatchError(message + " (HF_GENFIX_STRICT=1)")
        warnings.warn(message + f"; set {env_name(m.id)}=off to silence", HFGenfixWarning, stacklevel=2)
        return state, why

    def _summarise(self, version: str | None, trigger: str, changed: list[str]) -> None:
        if not log.isEnabledFor(logging.INFO):
            return
        by_state: dict[str, list[str]] = {}
        for pid in changed:
            if self._entries[pid].state not in (PENDING, ARMED):  # still waiting: said once it is installed
                by_state.setdefault(self._entries[pid].state, []).append(pid)
        if not by_state:
            return
        parts = [f"{state}: {', '.join(ids)}" for state, ids in sorted(by_state.items())]
        log.info("hf_genfix on transformers %s (import of %s): %s", version, trigger, "; ".join(parts))


def _imported(name: str, trigger: str) -> bool:
    """Whether module ``name`` has finished executing. A module still initializing (another hook fired while it
    was importing, e.g. tokenization_auto importing generation.utils on 5.0) lacks its later attributes; its own
    hook (``trigger``) runs once its body is done, while importlib still marks it initializing."""
    module = sys.modules.get(name)
    if module is None:
        return False
    return name == trigger or not getattr(getattr(module, "__spec__", None), "_initializing", False)


def _parse_version(version: str | None) -> Any:
    if version is None:
        return None
    from packaging.version import Version

    return Version(version)
