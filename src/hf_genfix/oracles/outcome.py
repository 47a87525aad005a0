"""How a probe reports: return figures when correct, raise ``DefectObserved`` when the defect shows."""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Callable, Iterator, Sequence


class DefectObserved(AssertionError):
    """The behaviour differs from the oracle (or upstream raised the exception the defect is known by)."""

    def __init__(self, message: str, **figures: Any):
        super().__init__(message)
        self.message = message
        self.figures = figures


class ProbeSkipped(Exception):
    """The probe's scenario cannot run on this release (e.g. the architecture does not exist yet)."""


# A scenario of several stages (a first turn, then a second one from its cache) checks each stage: a wrong first
# turn ends the run there. Upstream's wrong first turn can then hide what upstream does in the later stage: on
# 5.3-5.12, Gemma-3's padded first image turn is wrong upstream, and the second turn, which hf_genfix reaches
# with a right first turn, raises upstream's own ValueError. ``past_earlier_stages`` lets the sweep run upstream
# on past such a stage to see it.
_PAST_EARLIER = contextvars.ContextVar("hf_genfix_past_earlier_stages", default=False)
EARLIER = "earlier"  # DefectObserved.figures["stage"] of a defect seen at an earlier stage


@contextlib.contextmanager
def earlier_stage() -> Iterator[None]:
    """Wrap the check of a stage that later stages build on: its ``DefectObserved`` ends the scenario, except
    inside ``past_earlier_stages()``."""
    try:
        yield
    except DefectObserved as exc:
        if not _PAST_EARLIER.get():
            exc.figures.setdefault("stage", EARLIER)  # the differential tells a wrong first turn from a later one
            raise


@contextlib.contextmanager
def past_earlier_stages() -> Iterator[None]:
    """Within: the checks wrapped in ``earlier_stage()`` do not end the scenario (only the sweep's attribution of
    a crash uses it; the last stage's check still decides the outcome)."""
    token = _PAST_EARLIER.set(True)
    try:
        yield
    finally:
        _PAST_EARLIER.reset(token)


# A scenario of several independent runs (each cache implementation in turn, ``_each_implementation``) is one
# finding when any run is wrong. The differential judges the pair of observations whole, so where hf_genfix
# corrects one run and leaves another bitwise upstream's (4.48.0's Cohere-2: "hybrid" corrected, "sliding_window"
# wrong both ways) the outputs differ and both are wrong: "another wrong output", which it is not. Each run is
# therefore a named part: the recording tags each call with the part it ran in, and the finding names its wrong
# and passing parts (``WRONG_PARTS``, ``PASSED_PARTS``, ``CRASHED_PARTS``: comma-separated names in its figures).
_PART: contextvars.ContextVar[str | None] = contextvars.ContextVar("hf_genfix_scenario_part", default=None)
WRONG_PARTS, PASSED_PARTS, CRASHED_PARTS = "wrong_parts", "passed_parts", "crashed_parts"


@contextlib.contextmanager
def scenario_part(name: str) -> Iterator[None]:
    """Within: the calls the differential records belong to the scenario's part ``name``."""
    token = _PART.set(name)
    try:
        yield
    finally:
        _PART.reset(token)


def current_part() -> str | None:
    """The scenario part being run (``scenario_part``), None outside any."""
    return _PART.get()


def parts(figures: dict[str, Any], key: str) -> set[str]:
    """The part names a finding's figures list under ``key``."""
    return {name for name in str(figures.get(key) or "").split(",") if name}


def run_parts(names: Sequence[str], run: Callable[[str], dict]) -> list[dict]:
    """``run(name)`` for each name, each in its own ``scenario_part``, every one run even after another is wrong:
    their figures. Silently wrong in any part: one ``DefectObserved`` naming every wrong part (the first one's
    figures, with the parts listed); else a crash of any part: the first crash. ``ProbeSkipped`` ends it at once
    (the scenario cannot run here)."""
    figures: list[dict] = []
    wrong: list[DefectObserved] = []
    wrong_names, passed, crashed = [], [], []
    crash: BaseException | None = None
    for name in names:
        with scenario_part(name):
            try:
                figures.append(run(name))
                passed.append(name)
            except ProbeSkipped:
                raise
            except DefectObserved as exc:
                wrong.append(exc)
                wrong_names.append(name)
            except Exception as exc:  # noqa: BLE001 - judged after the others: a silent error anywhere comes first
                crash = crash or exc
                crashed.append(name)
    if wrong:
        first = wrong[0]
        listed = {WRONG_PARTS: ",".join(wrong_names), PASSED_PARTS: ",".join(passed), CRASHED_PARTS: ",".join(crashed)}
        if len(wrong) == 1 and not crashed:
            first.figures.update(listed)
            raise first
        # The first part's cause stays the finding's cause (an upstream exception the oracle re-raised).
        raise DefectObserved("; ".join(exc.message for exc in wrong), **{**first.figures, **listed}) \
            from first.__cause__
    if crash is not None:
        raise crash
    return figures
