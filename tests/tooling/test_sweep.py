"""``hf-genfix doctor --sweep``: which architectures it covers, and how a failure is attributed.

The attribution is tested with fake scenarios against the fixture registry (doctor_fixture.py): a failure that
only a patch causes, one that a not-installed patch explains, one nothing explains, a crash, "not supported".
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from doctor_fixture import make_registry  # noqa: E402,F401 - a fixture
from hf_genfix.oracles import DefectObserved, sweep  # noqa: E402


def test_decoder_only_types():
    types = sweep.decoder_only_types()
    assert {"llama", "gpt2", "mistral", "qwen2"} <= set(types)
    assert not {"bert", "bart", "t5", "roberta"} & set(types)


def test_real_oracles_pass_on_llama(make_registry):
    out = sweep.run_sweep(make_registry("fixed-here"), archs=["llama"], scenarios=["cached", "left-padded"])
    runs = out["architectures"]["llama"]["scenarios"]
    assert {k: v["outcome"] for k, v in runs.items()} == {"cached": "pass", "left-padded": "pass"}
    assert runs["left-padded"]["steps_compared"] > 0 and runs["left-padded"]["max_logit_diff"] < 1e-4
    assert not sweep.failed(out)


def _thing():
    from genfix_doctor_fixture.target import Thing  # the fixture package exists once make_registry ran

    return Thing()


def only_when_patched(subject):
    if _thing().answer() != 41:  # the fixture patch changes the answer: a "regression" hf_genfix causes
        raise DefectObserved("regressed", step=2, max_logit_diff=3.0)
    return {}


def unless_forced(subject):
    if _thing().other() != 42:
        raise DefectObserved("other is wrong", step=1, max_logit_diff=0.5)
    return {}


def always_wrong(subject):
    raise DefectObserved("logits differ", step=3, row=1, max_logit_diff=0.25)


def crashes(subject):
    return {}["boom"]


def unsupported(subject):
    raise ValueError("this model does not support the static cache")


@pytest.fixture
def fake_scenarios(monkeypatch):
    for func in (only_when_patched, unless_forced, always_wrong, crashes, unsupported):
        monkeypatch.setitem(sweep.SCENARIOS, func.__name__, func)


def test_failures_are_attributed(make_registry, fake_scenarios):
    registry = make_registry("fixed-here", "unaffected-but-defect")
    names = ["only_when_patched", "unless_forced", "always_wrong", "crashes", "unsupported"]
    out = sweep.run_sweep(registry, archs=["llama", "not-a-model-type"], scenarios=names)
    assert set(out["not_buildable"]) == {"not-a-model-type"}
    outcomes = {k: v["outcome"] for k, v in out["architectures"]["llama"]["scenarios"].items()}
    assert outcomes == {"only_when_patched": "defect", "unless_forced": "defect", "always_wrong": "defect",
                        "crashes": "crash", "unsupported": "skipped"}
    unknown = {f["scenario"]: f for f in out["unknown"]}
    assert set(unknown) == {"only_when_patched", "always_wrong", "crashes"}
    assert unknown["only_when_patched"]["cause"].startswith("hf_genfix: passes with every patch off")
    assert (unknown["always_wrong"]["arch"], unknown["always_wrong"]["step"],
            unknown["always_wrong"]["max_logit_diff"]) == ("llama", 3, 0.25)
    assert unknown["crashes"]["kind"] == "crash" and "KeyError" in unknown["crashes"]["message"]
    (explained,) = out["explained"]
    assert explained["explained_by"] == "unaffected-but-defect" and explained["catalog_wrong"] is True
    assert sweep.failed(out)
    text = sweep.render_text(out)
    assert "UNKNOWN DEFECT: llama / always_wrong (defect, step 3, logit diff 0.25)" in text
    # The registry is as it was: the fixture patch installed, the other one not.
    assert {s.id: s.state for s in registry.status()} == {"fixed-here": "applied",
                                                         "unaffected-but-defect": "not-needed"}


def test_budget_stops_starting_architectures(make_registry):
    out = sweep.run_sweep(make_registry("fixed-here"), archs=["llama", "gpt2"], scenarios=["cached"], budget_s=0)
    assert out["not_reached"] == ["llama", "gpt2"] and out["architectures"] == {}


def test_an_architecture_where_everything_crashes_alike_is_unusable_not_a_defect(make_registry, monkeypatch):
    for name in ("first", "second"):
        monkeypatch.setitem(sweep.SCENARIOS, name, crashes)
    out = sweep.run_sweep(make_registry("fixed-here"), archs=["llama"], scenarios=["first", "second"])
    assert out["unknown"] == [] and out["unusable"]["llama"].startswith("KeyError: 'boom'")
    assert "unusable tiny: llama" in sweep.render_text(out)
