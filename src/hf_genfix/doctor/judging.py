"""Judging one patch: its verdict from its state, its range and what its probe saw without and with it."""

from __future__ import annotations

import time
from typing import Any

from .. import catalog
from . import probing
from .report import (
    CATALOG_WRONG,
    DEFECT,
    ERROR,
    EXPOSED,
    FIXED,
    NOT_FIXED,
    NOT_NEEDED,
    NOT_REPRODUCED,
    OPEN,
    PROBE_ERROR,
    SKIPPED,
    SKIPPED_VERDICT,
    UNCHECKED,
    UNPROTECTED,
    PatchReport,
    ProbeRun,
)


def judge(state: str, in_range: bool | None, without: ProbeRun | None, with_patch: ProbeRun | None,
          version: str | None, affected: str, open_record: dict | None = None) -> tuple[str, str]:
    """(verdict, message) from the patch's state and the probe runs. ``open_record``: the open finding that covers
    the patch's sweep claims on this release, if one does (a defect outside the range is then that one)."""
    runs = [r for r in (without, with_patch) if r is not None]
    for run in runs:
        if run.outcome == ERROR:
            return PROBE_ERROR, f"the probe is broken: {run.message}"
    if with_patch is not None:  # the patch is installed (applied or forced)
        if with_patch.outcome == DEFECT:
            return NOT_FIXED, f"the patch is installed but the defect remains: {with_patch.message}"
        if without is not None and without.outcome == DEFECT:
            if not in_range:
                return CATALOG_WRONG, (
                    f"catalog wrong: the defect shows on transformers {version}, outside affected {affected!r} "
                    f"(the patch is forced here and fixes it): {without.message}"
                )
            return FIXED, f"defect without the patch ({without.message}); fixed with it"
        if SKIPPED in (with_patch.outcome, getattr(without, "outcome", None)):
            return SKIPPED_VERDICT, (without if without and without.outcome == SKIPPED else with_patch).message
        if in_range is False:
            return NOT_NEEDED, f"the patch is forced on transformers {version}, outside {affected!r}; no defect"
        return NOT_REPRODUCED, (
            f"the probe sees no defect without the patch on transformers {version}, although {affected!r} "
            "includes it: the range may be too wide or the probe too weak"
        )
    assert without is not None
    if without.outcome == SKIPPED:
        return SKIPPED_VERDICT, without.message
    if without.outcome == DEFECT:
        if in_range is False and open_record is not None:
            return OPEN, (f"outside {affected!r}, and this path is on file as wrong on transformers {version} for "
                          f"another reason (patches/open-findings.json): {open_record['what']} -- the probe: "
                          f"{without.message}")
        if in_range is False:
            return CATALOG_WRONG, (
                f"catalog wrong: the defect shows on transformers {version}, which affected {affected!r} "
                f"excludes: {without.message}"
            )
        if state in ("drift", "failed"):
            return UNPROTECTED, f"the patch could not be installed ({state}) and the defect is present: " \
                                f"{without.message}"
        return EXPOSED, f"the patch is {state} and the defect is present: {without.message}"
    if in_range is False:
        return NOT_NEEDED, f"transformers {version} is outside {affected!r} and the probe sees no defect"
    return UNCHECKED, f"the patch is {state}; the probe sees no defect without it"


def judge_plain_program(report: PatchReport, plain: dict[str, Any]) -> None:
    """A patch installed here (doctor imports every target) but not in a plain program meeting its defect
    protects nobody: ``unprotected``, whatever the probes said."""
    from .._registry import INSTALLED

    report.plain_program = plain
    if plain.get("state") is None:
        report.message += f" (not checked in a plain program: {plain.get('error') or plain.get('reason')})"
        return
    if plain["state"] in INSTALLED or report.failing:
        return
    report.verdict = UNPROTECTED
    report.message = (
        f"a plain program does not get the patch: after `import hf_genfix, transformers` and "
        f"`{plain['imports']}` it is {plain['state']} ({plain['reason']})"
        + (f"; the program raised {plain['error']}" if plain.get("error") else "")
        + f"; only with every target imported, as here, is it {report.state}"
    )


def check_patch(registry: Any, status: Any, manifest: Any) -> PatchReport:
    from .._registry import INSTALLED, in_range

    start = time.perf_counter()
    version = status.transformers_version
    inside = in_range(manifest.affected, version) if version else None
    targets = [probing.describe_target(t) for t in manifest.targets] if version else []
    without = with_patch = None
    try:
        probe = catalog.probe(manifest)
    except Exception as exc:  # noqa: BLE001
        without = ProbeRun(ERROR, 0.0, f"cannot import probe {manifest.probe}: {type(exc).__name__}: {exc}")
    else:
        if status.state in INSTALLED:
            with registry.disabled(manifest.id):
                without = probing.run_probe(probe)
            with_patch = probing.run_probe(probe)
        else:
            without = probing.run_probe(probe)
    state = status.state
    from ..catalog import open_finding_for_claims

    open_record = open_finding_for_claims(manifest.sweep, version) if inside is False else None
    verdict, message = judge(state, inside, without, with_patch, version, manifest.affected, open_record)
    return PatchReport(
        id=manifest.id, state=state, reason=status.reason, affected=manifest.affected, in_range=inside,
        summary=manifest.summary, verdict=verdict, message=message, without=without, with_patch=with_patch,
        seconds=time.perf_counter() - start, targets=targets,
    )
