"""benchmarks/gpu_check.sh: on a machine without a GPU it says so in one line and exits 0."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.sh"


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU machine: the script would run for real")
def test_no_gpu_line_and_exit_0(tmp_path):
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GPU_CHECK_LOGS": str(tmp_path)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines() == ["gpu_check: no GPU (nvidia-smi not found): nothing to run"]


def test_script_is_strict_bash():
    text = SCRIPT.read_text(encoding="utf-8")
    assert "set -u" in text and "timeout" in text
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0
