"""The pytest plugin ``hf-genfix upgrade-check`` loads into your test run (``-p hf_genfix._upgrade_pytest``).

JUnit XML names a test by a dotted class name pytest cannot take back, and keeps no patch counts, so the check
loads this plugin instead: it writes one JSON file (``--hf-genfix-upgrade-report PATH``) with, per test, its
outcome, a node id that pytest takes from the folder it was run in (``tests/test_x.py::TestA::test_b[1]``),
the lines pytest prints for a failure (the ``E`` lines and the crash location) and, for the whole session, how
many calls went through each hf_genfix patch (``hf_genfix.recording()``). Collection errors are kept too: a
module that no longer imports on the candidate is why its tests are missing there.

It imports hf_genfix only when the session starts, when ``hf-genfix run`` has already activated it.
"""

from __future__ import annotations

import json
import os
from typing import Any

MAX_LINES = 12  # failure lines kept per test: the error and where it was raised, not the whole traceback


def pytest_addoption(parser: Any) -> None:
    parser.addoption("--hf-genfix-upgrade-report", default=None, help="(hf-genfix upgrade-check) write here")


def _pasteable(config: Any, nodeid: str) -> str:
    """The node id relative to the folder pytest was run in (pytest's own are relative to its rootdir)."""
    path, sep, rest = nodeid.partition("::")
    full = os.path.join(str(config.rootpath), path)
    rel = os.path.relpath(full, str(config.invocation_params.dir))
    return rel.replace(os.sep, "/") + sep + rest


def _failure_lines(report: Any) -> list[str]:
    text = getattr(report, "longreprtext", "") or ""
    lines = [ln for ln in text.splitlines() if ln.startswith("E ")]
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None:
        lines.append(f"{os.path.relpath(crash.path) if os.path.isabs(crash.path) else crash.path}:{crash.lineno}")
    elif not lines:
        lines = text.strip().splitlines()[-MAX_LINES:]
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES - 2] + ["E   ..."] + lines[-1:]
    return lines


class _Recorder:
    def __init__(self, config: Any, path: str) -> None:
        self.config, self.path = config, path
        self.tests: dict[str, dict[str, Any]] = {}
        self.collect_errors: dict[str, list[str]] = {}
        self._rec: Any = None
        self._cm: Any = None

    def pytest_sessionstart(self, session: Any) -> None:
        try:
            import hf_genfix

            self._cm = hf_genfix.recording()
            self._rec = self._cm.__enter__()
        except Exception:  # noqa: BLE001 - without hf_genfix the tests still run; only the counts are missing
            self._cm = None

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collect_errors[_pasteable(self.config, report.nodeid)] = _failure_lines(report)

    def pytest_runtest_logreport(self, report: Any) -> None:
        nodeid = _pasteable(self.config, report.nodeid)
        entry = self.tests.setdefault(nodeid, {"outcome": "passed"})
        if report.skipped and report.when in ("setup", "call"):
            entry["outcome"] = "skipped"  # a skip, or an xfail (pytest reports it as skipped with wasxfail)
        elif report.failed:
            # a failing setup or teardown is an error (as pytest counts it), a failing call a failure
            entry["outcome"] = "failed" if report.when == "call" else "error"
            entry.setdefault("lines", _failure_lines(report))

    def pytest_sessionfinish(self, session: Any) -> None:
        counts = {}
        if self._cm is not None:
            self._cm.__exit__(None, None, None)
            counts = {pid: calls for pid, (calls, _) in self._rec.counts.items() if calls}
        tmp = f"{self.path}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"tests": self.tests, "collect_errors": self.collect_errors, "patch_calls": counts}, fh)
        os.replace(tmp, self.path)


def pytest_configure(config: Any) -> None:
    path = config.getoption("--hf-genfix-upgrade-report")
    if path:
        config.pluginmanager.register(_Recorder(config, path), "hf-genfix-upgrade-recorder")
