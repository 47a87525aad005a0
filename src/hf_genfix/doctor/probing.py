"""Running one probe: its outcome by the probe contract, and what the patch's targets look like here."""

from __future__ import annotations

import inspect
import time
import traceback
import warnings
from typing import Any, Callable

from .report import DEFECT, ERROR, PASS, SKIPPED, ProbeRun


def run_probe(probe: Callable[[], Any]) -> ProbeRun:
    """Call ``probe()`` and classify what happened according to the probe contract."""
    from ..oracles.outcome import DefectObserved, ProbeSkipped

    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            figures = probe()
    except DefectObserved as exc:
        return ProbeRun(DEFECT, time.perf_counter() - start, exc.message, _plain(exc.figures))
    except ProbeSkipped as exc:
        return ProbeRun(SKIPPED, time.perf_counter() - start, str(exc))
    except Exception as exc:  # noqa: BLE001 - anything else is a bug in the probe, reported as such
        where = traceback.extract_tb(exc.__traceback__)[-1]
        message = f"{type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})"
        return ProbeRun(ERROR, time.perf_counter() - start, message)
    return ProbeRun(PASS, time.perf_counter() - start, "", _plain(figures if isinstance(figures, dict) else {}))


def _plain(figures: dict[str, Any]) -> dict[str, Any]:
    """Figures as JSON values (tensors and numpy scalars become numbers, anything else its repr)."""
    out: dict[str, Any] = {}
    for key, value in figures.items():
        if isinstance(value, (bool, int, float, str)) or value is None:
            out[key] = value
        elif hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
            out[key] = value.item()
        elif isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float, str)) for v in value):
            out[key] = list(value)
        else:
            out[key] = repr(value)
    return out


def describe_target(target: str) -> dict[str, Any]:
    """Whether ``target`` exists on this install and its parameters: what the upgrade check compares.

    Only parameter names and kinds are kept (annotations are reformatted between releases without meaning
    anything to a fix); a target that is not callable is described by its type.
    """
    from .._patcher import Drift, resolve

    try:
        _, _, value = resolve(target)
    except Drift as exc:
        return {"target": target, "exists": False, "signature": None, "detail": str(exc)}
    func = getattr(value, "__func__", value)
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return {"target": target, "exists": True, "signature": f"<{type(value).__name__}>", "detail": ""}
    prefix = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    names = [prefix.get(p.kind, "") + p.name for p in params]
    return {"target": target, "exists": True, "signature": f"({', '.join(names)})", "detail": ""}
