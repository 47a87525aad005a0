"""The whole run: every target imported, every patch probed and judged, quiet while it runs."""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import platform
import threading
import time
from typing import Any, Callable, Iterator, Sequence

from .._fork import reset_in_child
from . import judging
from .arguments import UsageError, unknown_patches
from .report import PatchReport, dist_version

SCHEMA = 1
BUDGET_S = 15.0  # a quiet 2-core machine: 13 s measured on 5.24.0 with 74 patches (JSON ``budget_seconds``); information only
_QUIET_BARS: contextvars.ContextVar[bool] = contextvars.ContextVar("hf_genfix_doctor_quiet_bars", default=False)
_BARS_LOCK = reset_in_child(threading.Lock())  # a forked child starts with it free
_BARS: dict[str, Any] = {"open": 0, "hook": None, "previous": None}  # quiet_progress blocks open, process-wide


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """The probes on one torch thread while the plain-program interpreters run beside them (the CLI only: this
    process is ours). Tiny models gain nothing from a second thread, and two OpenMP threads that wait for each
    other while those interpreters hold the cores made each probe up to 30 times slower: 17.5 s for doctor on
    5.24.0 on a quiet 2-core machine, of which 4.3 s for one probe that takes 0.14 s alone."""
    try:
        import torch
    except ImportError:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def import_targets(registry: Any = None) -> str | None:
    """Import every target module of the patches (of ``registry``, the process-wide one by default) so that each
    patch is decided now; returns the transformers version (None when transformers is not installed). A program
    that wants every patch for its release in place before it runs anything calls this once after the import."""
    import hf_genfix

    from .._registry import transformers_version

    if registry is None:
        registry = hf_genfix._activation.registry()
    if registry is not hf_genfix._activation.registry() and transformers_version() is None:
        return None
    try:
        importlib.import_module("transformers")  # the version a registry gates on is the imported one
    except ImportError:
        return None
    for manifest in registry.manifests():
        for module in manifest.target_modules:
            with contextlib.suppress(ImportError):
                importlib.import_module(module)  # a module this release lacks: the patch stays pending or drifts
    return transformers_version()


@contextlib.contextmanager
def quiet_logs() -> Iterator[None]:
    """Keep the log lines probes provoke on purpose (transformers' padding warnings, the pad-token patch's notice)
    out of the report; restored afterwards."""
    import logging

    ours = logging.getLogger("hf_genfix")
    our_level = ours.level
    ours.setLevel(logging.ERROR)
    try:
        from transformers.utils import logging as tlog
    except Exception:  # noqa: BLE001 - no transformers, nothing else to quieten
        tlog = None
    level = tlog.get_verbosity() if tlog else None
    if tlog:
        tlog.set_verbosity_error()
    try:
        yield
    finally:
        ours.setLevel(our_level)
        if tlog:
            tlog.set_verbosity(level)


# What the doctor's findings mean on a release outside the verified range.
UNVERIFIED_FINDINGS = ("the checks below ran anyway, but on a release nobody verified a broken probe or a patch that "
                       "could not be installed can be this release's API rather than a defect; each patch is still "
                       "installed only where its affected range covers the release")


@contextlib.contextmanager
def quiet_progress() -> Iterator[None]:
    """No transformers progress bars ("Loading weights", "Writing model shards": the probes save and load tiny
    models) from the calling thread or task inside the block; other threads keep theirs.

    transformers' own switch, ``disable_progress_bar()``, is one global flag every thread reads, so instead a
    factory hook (``transformers.utils.logging._tqdm_hook``, 5.x: the releases whose loading shows bars) hands out
    the silent bar in this context only and defers to the hook it found everywhere else. The hook is put in by the
    first open block and taken out by the last (unless someone replaced it meanwhile)."""
    try:
        from transformers.utils import logging as tlog
    except Exception:  # noqa: BLE001 - no transformers, no bars
        tlog = None
    if tlog is None:
        yield
        return
    if not hasattr(tlog, "_tqdm_hook") or not hasattr(tlog, "EmptyTqdm"):
        # Releases without the hook (4.x, 5.0 - 5.x before it): only the global switch exists. doctor owns its
        # process, so it turns the bars off for the block (the first open block) and back on after the last.
        with _BARS_LOCK:
            if _BARS["open"] == 0:
                _BARS["previous"] = tlog.is_progress_bar_enabled()
                tlog.disable_progress_bar()
            _BARS["open"] += 1
        try:
            yield
        finally:
            with _BARS_LOCK:
                _BARS["open"] -= 1
                if _BARS["open"] == 0 and _BARS["previous"]:
                    tlog.enable_progress_bar()
        return
    with _BARS_LOCK:
        if _BARS["open"] == 0:
            previous = tlog._tqdm_hook

            def hook(factory: Any, args: tuple, kwargs: dict) -> Any:
                if _QUIET_BARS.get():
                    return tlog.EmptyTqdm(*args, **kwargs)
                return previous(factory, args, kwargs) if previous is not None else factory(*args, **kwargs)

            _BARS["hook"], _BARS["previous"] = hook, previous
            tlog._tqdm_hook = hook
        _BARS["open"] += 1
    token = _QUIET_BARS.set(True)
    try:
        yield
    finally:
        _QUIET_BARS.reset(token)
        with _BARS_LOCK:
            _BARS["open"] -= 1
            if _BARS["open"] == 0 and tlog._tqdm_hook is _BARS["hook"]:
                tlog._tqdm_hook = _BARS["previous"]


def diagnose(registry: Any = None, only: Sequence[str] = (),
             plain_states: Callable[[list[tuple[str, str]]], Callable[[], dict[str, Any]]] | None = None,
             ) -> dict[str, Any]:
    """Run the catalog check on ``registry`` (the process-wide one by default); returns the JSON report.

    ``plain_states(patches)`` starts the plain-program check for the installed ``(id, family)`` pairs and returns
    the function that collects it (patch id -> record, see ``oracles.user_programs``); by default the real
    fresh interpreters, for the process-wide registry only (a fresh interpreter knows no other)."""
    import hf_genfix

    from .._registry import INSTALLED

    if registry is None:
        registry = hf_genfix._activation.registry()
    if plain_states is None and registry is hf_genfix._activation.registry():
        from ..oracles.user_programs import PlainRun

        plain_states = lambda patches: PlainRun(patches).results  # noqa: E731
    start = time.perf_counter()
    version = import_targets(registry)
    manifests = {m.id: m for m in registry.manifests()}
    problem = unknown_patches(only, registry)
    if problem:
        raise UsageError(problem)
    from ..catalog import outside_verified, verified_range

    patches: list[PatchReport] = []
    if version is not None:
        statuses = [s for s in registry.status() if not only or s.id in only]
        installed = [(s.id, s.family) for s in statuses if s.state in INSTALLED]
        # Started before the probes, read after: the fresh interpreters run while the probes do.
        collect = plain_states(installed) if plain_states is not None and installed else None
        with quiet_logs(), quiet_progress():
            for status in statuses:
                patches.append(judging.check_patch(registry, status, manifests[status.id]))
        if collect is not None:
            plain = collect()
            for report in patches:
                if report.id in plain:
                    judging.judge_plain_program(report, plain[report.id])
    elapsed = time.perf_counter() - start
    return {
        "schema": SCHEMA,
        "hf_genfix": hf_genfix.__version__,
        "transformers": version,
        "torch": dist_version("torch"),
        "python": platform.python_version(),
        "seconds": round(elapsed, 3),
        "budget_seconds": BUDGET_S,
        "verified_range": list(verified_range() or ()),
        "unsupported": outside_verified(version, UNVERIFIED_FINDINGS) if version else None,
        "ok": not any(p.failing for p in patches),
        "patches": [p.to_dict() for p in patches],
    }
