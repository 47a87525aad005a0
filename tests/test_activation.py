"""What `import hf_genfix` does in a user's process: nothing heavy, nothing without transformers, one log line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import run_json, run_python


def test_import_loads_neither_torch_transformers_nor_the_registry():
    out = run_json("""
        import json, sys, hf_genfix
        print(json.dumps({m: m in sys.modules for m in
                          ("torch", "transformers", "wrapt", "packaging", "hf_genfix._registry")}))
    """)
    assert out == {"torch": False, "transformers": False, "wrapt": False, "packaging": False,
                   "hf_genfix._registry": False}


def test_without_transformers_import_works_and_nothing_happens():
    out = run_json("""
        import json, sys
        sys.modules["transformers"] = None  # as if it were not installed: importing it raises ImportError
        import hf_genfix
        try:
            import transformers
        except ImportError:
            pass
        states = {s.id: s.state for s in hf_genfix.status()}
        print(json.dumps({"states": sorted(set(states.values())) or ["pending"],
                          "versions": sorted({str(s.transformers_version) for s in hf_genfix.status()})}))
    """)
    assert out["states"] in (["pending"], ["disabled"], ["disabled", "pending"])
    assert out["versions"] in ([], ["None"])


@pytest.mark.slow
def test_debug_log_says_once_what_was_decided():
    """HF_GENFIX_LOG=debug: each decided patch is named once, with its state, as its modules are imported (at
    info only the one summary line is said: tests/test_newcomer.py)."""
    pytest.importorskip("transformers")
    proc = run_python("""
        import hf_genfix, transformers, json
        from hf_genfix.doctor import import_targets
        import_targets()
        print(json.dumps({s.id: s.state for s in hf_genfix.status()}))
    """, env={"HF_GENFIX_LOG": "debug"})
    assert proc.returncode == 0, proc.stderr
    states = json.loads(proc.stdout.splitlines()[-1])
    lines = [line for line in proc.stderr.splitlines()
             if line.startswith("DEBUG hf_genfix: hf_genfix on transformers") and "(import of " in line]
    said: dict[str, list[str]] = {}
    for line in lines:
        for part in line.split("): ", 1)[1].split("; "):
            state, _, ids = part.partition(": ")
            for pid in ids.split(", "):
                said.setdefault(pid, []).append(state)
    decided = {pid: state for pid, state in states.items() if state not in ("pending", "armed")}
    assert decided, states
    assert {pid: said.get(pid) for pid in decided} == {pid: [state] for pid, state in decided.items()}


def _cli(*args):
    exe = shutil.which("hf-genfix", path=str(__import__("pathlib").Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "hf_genfix"]


@pytest.mark.parametrize("how", ["console script", "python -m"])
def test_list_json_matches_status(how):
    cmd = (_cli() if how == "console script" else [sys.executable, "-m", "hf_genfix"]) + ["list", "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) == {"transformers", "patches"}
    for record in data["patches"]:
        assert {"id", "state", "reason", "targets", "affected", "transformers_version"} <= set(record)
        assert record["state"] in ("applied", "forced", "not-needed", "disabled", "armed", "pending",
                                   "drift", "failed")
