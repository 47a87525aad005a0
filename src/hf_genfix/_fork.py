"""Every lock hf_genfix creates stays usable in a child made by ``os.fork()``.

A fork copies a lock in the state it had, but only the forking thread: a lock another thread held at that moment
is held forever in the child, and its first ``activate()``, ``forced()`` or import of a target module blocked
(12 of 12 tries before this module existed). DataLoader workers and pre-forking servers fork like this.

Two kinds of lock:

- ``hold_across_fork(lock, in_child)``: a lock that guards work in several steps (the registry's stack of installed
  patches). ``os.fork()`` waits until that lock is free (at most ``WAIT_S`` seconds, then forks anyway), so that
  the child starts from a state the lock's owner finished; in the child the lock is new and ``in_child()`` runs.
  A fork by the thread that holds the lock (remote code forking while it is imported) neither waits nor resets
  it: that thread's own block releases it, in the parent and in the child.
- ``reset_in_child(lock)``: a lock held for one short update; the child gets it free.

Like ``logging``'s own locks, which the standard library resets the same way.
"""

from __future__ import annotations

import os
import weakref
from typing import Any, Callable

WAIT_S = 10.0
_held: list[tuple[Any, Callable[[], Any] | None]] = []  # (weakref to the lock, weakref to the child callback)
_reset: list[Any] = []  # weakrefs to locks
_acquired: list[Any] = []


def hold_across_fork(lock: Any, in_child: Callable[[], None] | None = None) -> None:
    """Hold ``lock`` while the process forks; in the child, a free lock and ``in_child()`` (a bound method is
    held weakly, like the lock)."""
    callback = weakref.WeakMethod(in_child) if hasattr(in_child, "__self__") else (lambda: in_child)
    _held[:] = [(r, c) for r, c in _held if r() is not None]  # registries come and go (tests build many)
    _held.append((weakref.ref(lock), callback if in_child is not None else None))


def reset_in_child(lock: Any) -> Any:
    """``lock``, registered to be free in a forked child; returned for ``_LOCK = reset_in_child(Lock())``."""
    _reset[:] = [r for r in _reset if r() is not None]  # one per Patcher: patches come and go
    _reset.append(weakref.ref(lock))
    return lock


def _live(refs: list[Any]) -> list[Any]:
    return [lock for lock in (r() for r in refs) if lock is not None]


_mine: list[Any] = []  # held locks the forking thread itself holds: its own stack releases them, in the child too


def _before() -> None:
    # Newest first: a fix's lock is taken before the registry's inside a patched call (a remote module's import
    # runs the import hook), so this order is the nesting order.
    _acquired.clear()
    _mine.clear()
    for ref, _ in reversed(_held):
        lock = ref()
        if lock is None:
            continue
        if getattr(lock, "_is_owned", lambda: False)():
            _mine.append(lock)  # a fork from inside the lock's own block (remote code forking as it is imported)
        elif lock.acquire(timeout=WAIT_S):
            _acquired.append(lock)


def _after_in_parent() -> None:
    _mine.clear()
    while _acquired:
        _acquired.pop().release()


def _after_in_child() -> None:
    _acquired.clear()
    for lock in _live([r for r, _ in _held]) + _live(_reset):
        if all(lock is not m for m in _mine):
            lock._at_fork_reinit()
    _mine.clear()
    for ref, callback in _held:
        fn = callback() if callback is not None else None
        if ref() is not None and fn is not None:
            fn()
    _held[:] = [(r, c) for r, c in _held if r() is not None]
    _reset[:] = [r for r in _reset if r() is not None]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before, after_in_parent=_after_in_parent, after_in_child=_after_in_child)
