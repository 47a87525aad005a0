"""What a doctor report holds: the exit statuses, the outcome of one probe run, the verdict on one patch
and the record of each."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..verdicts import DOCTOR_FAILING, Word

__all__ = [
    "ATTENTION", "CATALOG_WRONG", "DEFECT", "ERROR", "EXIT_FAILING", "EXIT_OK", "EXIT_UNSUPPORTED", "EXIT_USAGE",
    "EXPOSED", "FAILING", "FIXED", "NOT_FIXED", "NOT_NEEDED", "NOT_REPRODUCED", "OPEN", "PASS", "PROBE_ERROR",
    "SKIPPED", "SKIPPED_VERDICT", "UNCHECKED", "UNPROTECTED", "PatchReport", "ProbeRun",
]

# Exit statuses (the module docstring says what each means).
EXIT_OK, EXIT_FAILING, EXIT_USAGE, EXIT_UNSUPPORTED = 0, 1, 2, 3

# Outcomes of one probe run.
PASS, DEFECT, SKIPPED, ERROR = Word.PASS, Word.DEFECT, Word.SKIPPED, Word.ERROR

# Verdicts per patch; the first group makes the exit status non-zero.
NOT_FIXED = Word.NOT_FIXED            # installed, yet the probe still sees the defect
CATALOG_WRONG = Word.CATALOG_WRONG    # the defect shows on a release the manifest says is unaffected
UNPROTECTED = Word.UNPROTECTED        # needed, could not be installed (drift / failed), defect present; or
                                      # installed here but not in a plain program that meets the defect
PROBE_ERROR = Word.PROBE_ERROR        # the probe itself is broken
FIXED = Word.FIXED                    # defect without the patch, none with it
NOT_NEEDED = Word.NOT_NEEDED          # outside the range and no defect
NOT_REPRODUCED = Word.NOT_REPRODUCED  # installed, but the probe sees no defect without it either
SKIPPED_VERDICT = Word.SKIPPED        # the scenario cannot run on this release
OPEN = Word.OPEN                      # outside the range, the probe's path is wrong here for a reason on file in
                                      # patches/open-findings.json (another defect, not patched yet)
EXPOSED = Word.EXPOSED                # the user switched the patch off (or it is pending) and the defect is there
UNCHECKED = Word.UNCHECKED            # no defect seen, patch not installed for a reason other than the range
FAILING = DOCTOR_FAILING
# Verdicts the short report lists (besides the failing ones): the user switched a needed patch off, or the probe
# and the range disagree. Fixed, not-needed and skipped patches are counted only (--verbose lists them).
ATTENTION = (EXPOSED, NOT_REPRODUCED, UNCHECKED)


@dataclass
class ProbeRun:
    outcome: str  # pass | defect | skipped | error
    seconds: float
    message: str = ""
    figures: dict[str, Any] = field(default_factory=dict)


@dataclass
class PatchReport:
    id: str
    state: str
    reason: str
    affected: str
    in_range: bool | None
    summary: str
    verdict: str
    message: str
    without: ProbeRun | None
    with_patch: ProbeRun | None
    seconds: float
    targets: list[dict[str, Any]]
    # What a fresh interpreter running the smallest user program that meets the defect gets (installed patches).
    plain_program: dict[str, Any] | None = None

    @property
    def failing(self) -> bool:
        return self.verdict in FAILING

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["with"] = d.pop("with_patch")
        d["failing"] = self.failing
        return d


def dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None
