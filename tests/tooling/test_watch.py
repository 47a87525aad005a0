"""scripts/watch_releases.py and .github/workflows/watch.yml: the weekly watch of new transformers releases.

The script's choices are tested on fake version lists and fake doctor reports; the workflow is linted with
actionlint (the test extra installs it) and must run the script, weekly and on demand."""

from __future__ import annotations

import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "watch.yml"


watch = SimpleNamespace(**runpy.run_path(str(ROOT / "scripts" / "watch_releases.py"), run_name="genfix_watch"))


@pytest.mark.parametrize("versions, chosen", [
    (["5.23.0", "5.25.0rc1", "5.24.0", "5.0.0rc3"], ["5.24.0", "5.25.0rc1"]),
    (["5.24.0", "5.0.0rc3", "4.57.6"], ["5.24.0"]),  # an old pre-release is not newer than the release
    (["5.24.0", "5.25.0.dev0"], ["5.24.0", "5.25.0.dev0"]),
    (["6.0.0b1"], ["6.0.0b1"]),
])
def test_the_newest_release_and_a_newer_pre_release_are_judged(versions, chosen):
    assert watch.choose(versions) == chosen


def test_findings_are_itemized_and_only_failures_fail():
    report = {
        "patches": [{"id": "p1", "verdict": "not-fixed", "message": "the defect remains", "failing": True},
                    {"id": "p2", "verdict": "fixed", "message": "", "failing": False}],
        "sweep": {
            "unknown": [{"arch": "llama", "scenario": "cached", "verdict": "unknown", "step": 2, "max_logit_diff": 0.5,
                         "message": "logits differ", "cause": "unknown"}],
            "known": [{"arch": "gpt2", "scenario": "beam", "catalog_wrong": True, "cause": "fixed by p3"},
                      {"arch": "gpt2", "scenario": "beam", "catalog_wrong": False, "cause": "known: p4"}],
            "suspect": [{"arch": "opt", "scenario": "uncached", "cause": "off by 5e-05"}],
            "recall": {"known": ["p1", "p5"], "found": {"p1": []}, "missed": {"p5": "a tokenizer defect"}},
        },
    }
    failing, look = watch.findings(report)
    assert failing == ["patch p1 not-fixed: the defect remains",
                       "unknown: llama / cached step 2 (0.5): logits differ [unknown]",
                       "catalog wrong: gpt2 / beam: fixed by p3"]
    assert look == ["suspect: opt / uncached: off by 5e-05", "recall: 1 of 2 known defects found by the sweep",
                    "recall missed p5: a tokenizer defect"]
    assert watch.findings({"patches": []}) == (["the report has no sweep"], [])


def test_the_workflow_runs_the_script_weekly_and_on_demand():
    text = WORKFLOW.read_text()
    assert "schedule:" in text and "cron:" in text and "workflow_dispatch:" in text
    assert "scripts/watch_releases.py versions --json" in text
    assert "scripts/watch_releases.py run --install" in text
    assert watch.DOCTOR_ARGS[:3] == ["--sweep", "--differential", "--recall"]


def test_the_workflows_lint_clean():
    actionlint = shutil.which("actionlint") or shutil.which("actionlint", path=str(Path(sys.executable).parent))
    if actionlint is None:
        pytest.skip("actionlint is not installed (the test extra installs it on Linux x86-64)")
    workflows = sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.yml"))
    assert str(WORKFLOW) in workflows
    out = subprocess.run([actionlint, *workflows], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    broken = WORKFLOW.read_text().replace("runs-on: ubuntu-latest", "runs-on: [", 1)
    bad = subprocess.run([actionlint, "-"], input=broken, capture_output=True, text=True)
    assert bad.returncode != 0  # the linter does lint


def test_the_script_runs_its_help():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "watch_releases.py"), "run", "--help"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "--install" in out.stdout
