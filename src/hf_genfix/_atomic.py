"""One atomic file write for doctor's report and upgrade-check's cache files."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def replace_with_text(path: Path, text: str, mode: int | None = None) -> None:
    """Write ``text`` to a temporary file in ``path``'s folder (which must exist), flush it to disk, then
    ``os.replace`` it over ``path``: a reader, or a run killed half way, sees the old file or the whole new one,
    never a part. ``mode``: the new file's permissions (``mkstemp`` makes it 0600)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
