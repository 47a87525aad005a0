"""The per-call record: which calls a patch saw, and what it changed in the ones it changed (opt-in).

Off by default. A fix module reports with ``if _record.on: _record.seen(ID)`` where its wrapper is entered and
``if _record.on: _record.changed(ID, "realigned %d of %d rows", n, batch)`` where it changes the call, so with
recording off the cost is one module attribute read and no allocation. ``HF_GENFIX_LOG=debug`` switches it on
for the whole process (each changed call is then one DEBUG line of the ``hf_genfix`` logger);
``hf_genfix.recording()`` switches it on for a block and collects the lines.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any, Iterator

from . import _fork

on = False  # read by the fix modules before every report: keep it a plain module attribute

_lock = _fork.reset_in_child(threading.Lock())
_counts: dict[str, list[int]] = {}  # patch id -> [calls seen, calls changed], while recording was on
_recorders: list["Recording"] = []
_always = False  # HF_GENFIX_LOG=debug: on for the whole process
log = logging.getLogger("hf_genfix")


class Recording:
    """What ``hf_genfix.recording()`` collected: ``lines`` (one per changed call, oldest first) and ``counts``
    (patch id -> (calls seen, calls changed) inside the block)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.counts: dict[str, tuple[int, int]] = {}

    def __repr__(self) -> str:
        return f"Recording(lines={self.lines!r}, counts={self.counts!r})"


def seen(patch_id: str) -> None:
    """One call went through ``patch_id``'s wrapper (changed or not)."""
    with _lock:
        _counts.setdefault(patch_id, [0, 0])[0] += 1
        for rec in _recorders:
            s, c = rec.counts.get(patch_id, (0, 0))
            rec.counts[patch_id] = (s + 1, c)


def changed(patch_id: str, what: str, *args: Any) -> None:
    """``patch_id`` changed this call; ``what % args`` says how, in a few words."""
    line = f"{patch_id}: {what % args if args else what}"
    with _lock:
        _counts.setdefault(patch_id, [0, 0])[1] += 1
        for rec in _recorders:
            rec.lines.append(line)
            s, c = rec.counts.get(patch_id, (0, 0))
            rec.counts[patch_id] = (s, c + 1)
    log.debug("%s", line)


def counts(patch_id: str) -> tuple[int, int]:
    """(calls seen, calls changed) by ``patch_id`` while recording was on, in this process."""
    seen_, changed_ = _counts.get(patch_id, (0, 0))
    return seen_, changed_


def enable_for_process() -> None:
    """``HF_GENFIX_LOG=debug``: record every call of the process."""
    global on, _always
    _always = on = True


@contextlib.contextmanager
def recording() -> Iterator[Recording]:
    global on
    rec = Recording()
    with _lock:
        _recorders.append(rec)
        on = True
    try:
        yield rec
    finally:
        with _lock:
            _recorders.remove(rec)
            on = _always or bool(_recorders)
