"""``oracles.sliding.check_same_as_greedy`` and a numerical tie.

A decoding mode (assisted, prompt lookup) whose tokens part from plain greedy's where the no-cache reference scores
both tokens within ``TIE`` of each other is right up to rounding, and is judged by its own logits (GPT-SW3's assisted
decoding on 4.46 and 4.57: 2.4e-07 apart at step 11, then the same tokens again). Where the reference tells the
two tokens apart, the divergence stays a defect, and its message gives the gap.
"""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_genfix.oracles import DefectObserved, tiny_model  # noqa: E402
from hf_genfix.oracles import sliding as sw  # noqa: E402


@pytest.fixture
def parted(monkeypatch):
    """The mode's run is plain greedy's with its token at step 2 swapped; ``gap`` is what the reference says."""
    real = sw.generate_steps
    state = {"gap": 0.0, "own_logits_checked": 0}

    def steps(model, ids, mask, **kwargs):
        run = real(model, ids, mask, **kwargs)
        if kwargs.get("prompt_lookup_num_tokens"):
            sequences = run.sequences.clone()
            at = run.prompt_width + 2
            sequences[0, at] = (sequences[0, at] + 1) % model.config.vocab_size
            run = dataclasses.replace(run, sequences=sequences)
        return run

    real_check = sw.check_rows_against_reference

    def check(model, rows, run, what, **kwargs):
        if what == "mode":
            state["own_logits_checked"] += 1
            return {"max_logit_diff": 0.0, "steps_compared": 1}
        return real_check(model, rows, run, what, **kwargs)

    monkeypatch.setattr(sw, "generate_steps", steps)
    monkeypatch.setattr(sw, "check_rows_against_reference", check)
    monkeypatch.setattr(sw, "tie_gap", lambda *args: state["gap"])
    return state


def test_a_tie_is_judged_by_the_modes_own_logits(parted):
    model = tiny_model("llama")
    figures = sw.check_same_as_greedy(model, [5, 6, 7, 8, 9, 10], 6, "mode", prompt_lookup_num_tokens=3)
    assert figures["tie_at_step"] == 2
    assert parted["own_logits_checked"] == 1


def test_a_divergence_the_reference_tells_apart_is_a_defect(parted):
    parted["gap"] = 0.5
    model = tiny_model("llama")
    with pytest.raises(DefectObserved, match=r"from step 2 .*differ by 0\.5"):
        sw.check_same_as_greedy(model, [5, 6, 7, 8, 9, 10], 6, "mode", prompt_lookup_num_tokens=3)


def test_the_gap_is_read_from_the_reference():
    from hf_genfix.oracles.reference import reference_logits

    model = tiny_model("llama")
    row, a = [5, 6, 7, 8], [9, 10]
    logits = reference_logits(model, row + a[:1])[-1]
    assert sw.tie_gap(model, row, a, [9, 11], 1) == pytest.approx(abs(float(logits[10]) - float(logits[11])))
    assert sw.tie_gap(model, row, a, [9], 1) is None  # one continuation ends there: no tie to speak of
