"""The cache's files: written atomically, read only when they parse and have the expected shape, and the
locks that let two checks of one release build it once."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterator

from .common import progress

MARKER = ".hf-genfix-complete"


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file in ``path``'s folder, then ``os.replace`` it: a reader (another check,
    or the next one after this one was killed) sees the old file or the whole new one, never a part."""
    from .._atomic import replace_with_text

    path.parent.mkdir(parents=True, exist_ok=True)
    replace_with_text(path, text)


def read_cached(path: Path, valid: Callable[[Any], bool],
                say: Callable[[str], None] = progress) -> Any | None:
    """The JSON in ``path`` if it parses and ``valid`` accepts it; otherwise None, and the file is removed so
    that it is rebuilt (a truncated, empty or wrong-shaped cache file is never trusted)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        data = None
    try:
        ok = data is not None and bool(valid(data))
    except Exception:  # noqa: BLE001 - a validator that trips over the shape is a wrong shape
        ok = False
    if ok:
        return data
    say(f"cached {path.name} does not parse or is incomplete: rebuilding it")
    with contextlib.suppress(OSError):
        path.unlink()
    return None


def valid_report(d: Any) -> bool:
    """A doctor report as ``compare_patches`` reads it."""
    if not isinstance(d, dict) or not isinstance(d.get("transformers"), str):
        return False
    patches = d.get("patches")
    if not isinstance(patches, list) or not patches:
        return False
    for p in patches:
        if not isinstance(p, dict) or not all(isinstance(p.get(k), str) for k in ("id", "state", "verdict")):
            return False
        if not isinstance(p.get("without") or {}, dict) or not isinstance(p.get("targets") or [], list):
            return False
    return True


def valid_scenarios(d: Any) -> bool:
    """What ``hf_genfix.upgrade_scenarios`` writes: per scenario tokens and scores, or an error."""
    if not isinstance(d, dict) or not isinstance(d.get("scenarios"), dict):
        return False
    if "error" in d:
        return isinstance(d["error"], str)
    if not d["scenarios"]:
        return False
    for r in d["scenarios"].values():
        if not isinstance(r, dict):
            return False
        if "error" not in r and not (isinstance(r.get("tokens"), list) and isinstance(r.get("scores"), list)):
            return False
    return isinstance(d.get("patches", {}), dict)


def valid_marker(d: Any) -> bool:
    return isinstance(d, dict) and isinstance(d.get("torch"), str) and isinstance(d.get("transformers"), str)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[Callable[[], None]]:
    """Hold an exclusive lock on ``path``; yields ``drop()``, which removes the lock file before it is released
    (a failed build leaves no lock behind). A waiter whose file was removed meanwhile locks the new one."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: one at a time
        fcntl = None  # type: ignore[assignment]
    while True:
        fh = open(path, "a")
        if fcntl is not None:
            fcntl.flock(fh, fcntl.LOCK_EX)  # two checks of the same release build it once
        try:
            same = os.fstat(fh.fileno()).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        fh.close()
    dropped = []
    try:
        yield lambda: dropped.append(True)
    finally:
        if dropped:
            with contextlib.suppress(OSError):
                os.unlink(path)
        fh.close()


def sweep_locks(root: Path) -> list[str]:
    """Remove the lock files no check holds whose environment is not complete (a failed or interrupted build,
    a mistyped release of an earlier hf_genfix): they would accumulate, one per attempt."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        return []
    removed = []
    for lock in sorted(root.glob("*.lock")):
        if read_cached(root / lock.stem / MARKER, valid_marker, lambda _: None) is not None:
            continue
        try:
            with open(lock, "a") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if os.fstat(fh.fileno()).st_ino == os.stat(lock).st_ino:
                    os.unlink(lock)
                    removed.append(lock.name)
        except OSError:
            continue  # held by a running check, or gone
    return removed
