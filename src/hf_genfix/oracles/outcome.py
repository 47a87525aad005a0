"""How a probe reports: return figures when correct, raise ``DefectObserved`` when the defect shows."""

from __future__ import annotations

from typing import Any


class DefectObserved(AssertionError):
    """The behaviour differs from the oracle (or upstream raised the exception the defect is known by)."""

    def __init__(self, message: str, **figures: Any):
        super().__init__(message)
        self.message = message
        self.figures = figures


class ProbeSkipped(Exception):
    """The probe's scenario cannot run on this release (e.g. the architecture does not exist yet)."""
