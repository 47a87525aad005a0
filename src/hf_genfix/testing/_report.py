"""The result of ``check_generation``: one outcome per check, readable by whoever wrote the model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

PASSED, FAILED, SKIPPED, NOT_RUN = "passed", "failed", "skipped", "not run"


class GenerationCheckFailed(AssertionError):
    """At least one generation check failed; the message is the report's text."""

    def __init__(self, report: "GenerationReport"):
        super().__init__(str(report))
        self.report = report


@dataclass
class CheckResult:
    """One check: ``outcome`` is passed | failed | skipped (does not apply to this model) | not run."""

    name: str
    title: str
    outcome: str
    message: str = ""
    figures: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.outcome == PASSED

    @property
    def failed(self) -> bool:
        return self.outcome == FAILED

    @property
    def step(self) -> int | None:
        """The generated step (0 = the token chosen right after the prompt) where the check first failed."""
        return self.figures.get("step")

    @property
    def max_logit_diff(self) -> float | None:
        return self.figures.get("max_logit_diff")

    def line(self) -> str:
        head = f"{self.outcome.upper():8} {self.name}: {self.title}"
        if self.outcome == PASSED:
            diff = self.figures.get("max_logit_diff")
            detail = f" (max |logit diff| {diff:.2g}" if diff is not None else " ("
            steps = self.figures.get("steps_compared")
            detail += (f", {steps} steps compared" if steps is not None else "") + f", {self.seconds:.2f}s)"
            return head + detail.replace("(, ", "(")
        return head + ("\n" + _indent(self.message) if self.message else "")


@dataclass
class GenerationReport:
    """Per-check outcomes of ``check_generation``. ``bool(report)`` is False when a check failed;
    ``report.raise_for_failures()`` (or the ``generation_checker`` fixture) raises ``GenerationCheckFailed``."""

    model: str
    transformers_version: str | None
    patches: list[str]
    checks: list[CheckResult]
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if c.failed]

    def __bool__(self) -> bool:
        return self.ok

    def __iter__(self) -> Iterator[CheckResult]:
        return iter(self.checks)

    def __getitem__(self, name: str) -> CheckResult:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(f"no check {name!r}; ran: {[c.name for c in self.checks]}")

    def raise_for_failures(self) -> "GenerationReport":
        if self.failures:
            raise GenerationCheckFailed(self)
        return self

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for c in self.checks:
            counts[c.outcome] = counts.get(c.outcome, 0) + 1
        return ", ".join(f"{n} {o}" for o, n in counts.items())

    def __str__(self) -> str:
        patches = ", ".join(self.patches) if self.patches else "none"
        lines = [
            f"generation checks for {self.model} on transformers {self.transformers_version}: "
            f"{self.summary()} ({self.seconds:.1f}s; hf_genfix patches installed: {patches})"
        ]
        lines += [c.line() for c in self.checks]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<GenerationReport {self.model}: {self.summary()}>"


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
