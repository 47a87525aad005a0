"""The words hf_genfix's reports judge with, in one place: what one run of a check gave (its outcome) and what a
report concludes from it (a verdict), for doctor (per patch), the differential (hf_genfix against upstream, per
scenario), upgrade-check (per model) and the sweep (per architecture and scenario).

Each word is a ``Word``: a ``str`` whose value is what the text reports and the JSON print, so a report written
before this module, a test comparing with ``"pass"`` and a dict keyed by the plain string all read the same. Two
reports that share a word share its member (``skipped`` is doctor's, the differential's and the sweep's); what a
word means in a report is that report's own legend (``doctor.MEANING``, ``sweep.MEANING``), which may say more.
"""

from __future__ import annotations

import enum


class Word(str, enum.Enum):
    """A report's word; ``str()`` and ``format()`` give its value (as ``enum.StrEnum`` does from Python 3.11)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    # What one run of a check gave.
    PASS = "pass"  # the output matches the oracle (doctor: the probe saw no defect)
    WRONG = "wrong"  # the differential: the oracle sees a silently wrong output
    RAISED = "raised"  # the differential: the run raised
    DEFECT = "defect"  # doctor: the probe saw its defect
    ERROR = "error"  # doctor: the probe itself broke
    SKIPPED = "skipped"  # the check cannot run on this release

    # doctor, per patch (the first four make its exit status 1).
    NOT_FIXED = "not-fixed"
    CATALOG_WRONG = "catalog-wrong"
    UNPROTECTED = "unprotected"
    PROBE_ERROR = "probe-error"
    FIXED = "fixed"
    NOT_NEEDED = "not-needed"
    NOT_REPRODUCED = "not-reproduced"
    OPEN = "open"
    EXPOSED = "exposed"
    UNCHECKED = "unchecked"

    # The differential, per scenario: hf_genfix against upstream.
    IDENTICAL = "identical"
    CORRECTED = "corrected"
    SAME_EXCEPTION = "same-exception"
    UNCHANGED = "unchanged"
    REFUSED = "refused"
    UNSUPPORTED = "unsupported"
    ROUNDING = "rounding"
    WORSE = "worse"

    # upgrade-check, per model: one release's outputs against the other's (with identical).
    DIFFERS = "differs"
    FAILS = "fails"  # one side raises
    FAILS_ON_BOTH = "fails on both"

    # The sweep, per architecture and scenario (with pass, skipped, unsupported, catalog-wrong, worse, open).
    KNOWN = "known"
    UNKNOWN = "unknown"
    UNUSABLE = "unusable"
    SUSPECT = "suspect"
    LOUD = "upstream-error"


# The patch verdicts that make ``hf-genfix doctor`` exit 1 (doctor's own, and upgrade-check's reading of its report).
DOCTOR_FAILING = (Word.NOT_FIXED, Word.CATALOG_WRONG, Word.UNPROTECTED, Word.PROBE_ERROR)
