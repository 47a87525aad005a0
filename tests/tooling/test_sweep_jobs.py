"""``doctor --sweep --jobs N`` (``oracles.sweep.jobs``): the same report as one process, a dead worker listed."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from doctor_fixture import make_registry  # noqa: E402,F401 - a fixture

from hf_genfix.oracles import sweep  # noqa: E402
from hf_genfix.oracles.sweep import jobs  # noqa: E402


def test_workers_judge_as_one_process_does_in_the_sweeps_order():
    # A decoder-only model, a recurrent one and an encoder-decoder, and the recall tracker: the workers' records,
    # merged, are the sequential report, in the sweep's order of architectures.
    archs = ["llama", "mamba", "t5"]
    names = ["cached", "second-turn", "s2s-cached"]
    names = [n for n in names if n in sweep.SCENARIOS]
    lines = {1: [], 2: []}
    # One torch thread here as in each worker (threads // jobs): the float sums then round alike, and the report
    # is bitwise the same (with two threads here the logit differences move in the 7th digit).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        reports = {jobs_: sweep.run_sweep(archs=archs, scenarios=names, differential_all=True, jobs=jobs_,
                                          recall=["decoding-prompt-lookup-length"], progress=lines[jobs_].append)
                   for jobs_ in (1, 2)}
    finally:
        torch.set_num_threads(threads)
    assert list(reports[2]["architectures"]) == list(reports[1]["architectures"])
    assert jobs.differences(reports[1], reports[2]) == []
    assert len(lines[2]) == len(lines[1]) == len(archs)


def test_a_worker_that_dies_costs_its_architecture_listed_as_unknown(monkeypatch):
    dead = set()

    class Fake:
        def ask(self, message):
            assert id(self) not in dead, "a dead worker was asked again"
            if message[0] == "finish":
                return {}
            if message[1] == "gpt2":
                dead.add(id(self))
                raise jobs.WorkerDied(-11)
            return {"type": message[1], "skipped": None, "unusable": None, "findings": [], "settled": [],
                    "pairs": [], "line": "ok", "result": {"seconds": 0.0, "scenarios": {}}}

        def close(self):
            pass

    made = []
    monkeypatch.setattr(jobs, "_Worker", lambda config: made.append(Fake()) or made[-1])
    report = sweep.run_sweep(archs=["llama", "gpt2", "mistral", "qwen2"], scenarios=["cached"], jobs=2)
    assert list(report["architectures"]) == ["llama", "gpt2", "mistral", "qwen2"]
    (listed,) = report["unknown"]
    assert listed["arch"] == "gpt2" and "killed by signal 11" in listed["message"]
    assert "--arch gpt2" in listed["message"]
    assert sweep.failed(report)
    assert len(dead) == 1 and len(made) >= 2  # a fresh worker took the dead one's place where work was left


def test_the_workers_use_the_process_wide_registry_only(make_registry):
    with pytest.raises(ValueError, match="process-wide registry"):
        sweep.run_sweep(make_registry("fixed-here"), archs=["llama"], scenarios=["cached"], jobs=2)


def test_a_budget_stops_handing_out_architectures(monkeypatch):
    monkeypatch.setattr(jobs, "_Worker", lambda config: pytest.fail("no worker is started past the budget"))
    out = sweep.run_sweep(archs=["llama", "gpt2"], scenarios=["cached"], budget_s=0, jobs=2)
    assert out["not_reached"] == ["llama", "gpt2"] and out["architectures"] == {}
