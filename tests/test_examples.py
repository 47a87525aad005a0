"""examples/: every script runs, prints WRONG with HF_GENFIX=off where the installed release has the defect it
shows (RIGHT where upstream is right) and RIGHT with hf_genfix, on whatever release this environment has."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hf_genfix._manifest import load_dir  # noqa: E402
from hf_genfix._registry import in_range  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
# example -> the patches whose defects it shows (upstream is wrong where one of them covers the release)
SHOWS = {
    "padding.py": ("right-padding",),
    "decode_loop.py": ("prepare-inputs",),
    "remote_code.py": ("legacy-cache",),
    "sliding_window.py": ("sliding-window-rollback-cache", "sliding-window-dynamic-full",
                          "sliding-window-draft-keys", "sliding-window-prefill-chunks"),
    "catalog_defect.py": None,  # a patch it picks among those covering the release: always a defect
}


def test_every_example_is_tested():
    assert sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_")) == sorted(SHOWS)


def _run(name: str, hf_genfix: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_GENFIX")}
    env.update(HF_GENFIX=hf_genfix, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p))
    return subprocess.run([sys.executable, str(EXAMPLES / name)], env=env, capture_output=True, text=True,
                          timeout=600, cwd=ROOT)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHOWS))
def test_example_is_wrong_upstream_and_right_with_hf_genfix(name):
    version = transformers.__version__
    manifests = {m.id: m for m in load_dir(ROOT / "patches")}
    shows = SHOWS[name]
    defect = shows is None or any(in_range(manifests[pid].affected, version) for pid in shows)
    off, on = _run(name, "off"), _run(name, "on")
    verdict_off, verdict_on = off.stdout.strip().splitlines()[-1:], on.stdout.strip().splitlines()[-1:]
    assert verdict_on and verdict_on[0].startswith("RIGHT with hf_genfix"), on.stdout + on.stderr[-3000:]
    assert on.returncode == 0
    expected = "WRONG" if defect else "RIGHT"
    assert verdict_off and verdict_off[0].startswith(f"{expected} HF_GENFIX=off"), off.stdout + off.stderr[-3000:]
    assert off.returncode == (1 if defect else 0)
