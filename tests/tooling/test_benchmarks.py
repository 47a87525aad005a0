"""benchmarks/: the README's performance table is the one run_all.py renders from benchmarks/results.json, and
every ratio is said with its spread ("no measurable difference" when its interval contains 1.0)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str):
    sys.path.insert(0, str(BENCH))  # the benchmarks import _paired as a sibling, as `python benchmarks/X.py` does
    try:
        spec = importlib.util.spec_from_file_location(f"genfix_bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


paired = _load("_paired")
run_all = _load("run_all")
releases = _load("releases")


def test_readme_performance_table_is_the_generated_one():
    import json

    data = json.loads((BENCH / "results.json").read_text(encoding="utf-8"))
    readme = run_all.README.read_text(encoding="utf-8")
    assert run_all.render(data) in readme, "run: python benchmarks/run_all.py --render"
    env = data["environment"]
    for key in ("transformers", "torch", "machine", "date"):
        assert env[key] in readme


def test_readme_per_release_decode_step_table_is_the_generated_one():
    import json

    data = json.loads(releases.RESULTS.read_text(encoding="utf-8"))
    assert releases.render(data) in run_all.README.read_text(encoding="utf-8"), \
        "run: python benchmarks/releases.py --render"
    assert len({r["release"] for r in data["releases"]}) == len(data["releases"]) >= 1


def test_every_benchmark_has_a_row_and_a_runnable_usage_line():
    for name in run_all.BENCHMARKS:
        text = (BENCH / f"{name}.py").read_text(encoding="utf-8")
        assert f"python benchmarks/{name}.py" in text
        assert "/work/" not in text and "venvs" not in text  # no launcher that exists only on our machines


def test_noise_is_named_not_reported_as_a_ratio():
    noisy = paired.ratio([0.95, 1.08, 0.99, 1.03, 0.97, 1.06, 1.01, 0.98])
    assert noisy.low <= 1.0 <= noisy.high and not noisy.measurable
    assert "no measurable difference" in noisy.words(target=1.02)
    slower = paired.ratio([1.11, 1.13, 1.12, 1.10, 1.14, 1.12, 1.13, 1.11])
    assert slower.measurable and slower.low > 1.0
    text = slower.words(target=1.02)
    assert "slower by 12" in text and "ABOVE TARGET" in text and "8 pairs" in text


@pytest.mark.parametrize("values", [[1.0], [0.5, 2.0]])
def test_small_samples_still_give_an_interval(values):
    r = paired.ratio(values)
    assert r.low <= r.median <= r.high and r.pairs == len(values)
