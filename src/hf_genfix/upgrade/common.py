"""What every part of the upgrade check shares: its two errors and its progress line."""

from __future__ import annotations

import sys


def progress(message: str) -> None:
    sys.stderr.write(f"upgrade-check: {message}\n")
    sys.stderr.flush()


class UsageError(Exception):
    pass


class EnvError(Exception):
    pass
