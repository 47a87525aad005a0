"""The sweep scenarios that closed the last two recall misses of session 11 (issue 36):

- ``same-call-twice`` (``oracles/sweep/inputs.py``): a forward writes into none of the tensors it is given, and the
  same call twice gives the same logits. It must pass on a plain tiny llama, fail on one whose forward writes into
  its ``position_ids``, and find model-xglm-positions on the releases that have it (< 5.3).
- ``remote-logged`` (``oracles/sweep/remote.py``): remote-cached under a handler that formats every record. The
  handler must let a malformed logging call's error out (the defect of remote-code-mask-warning, 5.2.0) and leave
  transformers' logger as it was.
"""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from packaging.version import Version  # noqa: E402

from hf_genfix.oracles import sweep
from hf_genfix.oracles.sweep import inputs as sweep_inputs
from hf_genfix.oracles.sweep import remote as sweep_remote  # noqa: E402

RELEASE = Version(Version(transformers.__version__).base_version)


def with_and_without(scenario: str, subject, patch: str):
    """The scenario's observation with hf_genfix as installed, and with ``patch`` alone off."""
    import hf_genfix

    func = sweep.SCENARIOS[scenario]
    ours = sweep.observe(func, subject)
    with hf_genfix.disabled(patch):
        return ours, sweep.observe(func, subject)


def test_the_scenarios_are_registered():
    assert sweep.SCENARIOS["same-call-twice"] is sweep_inputs.same_call_twice
    assert sweep.SCENARIOS["remote-logged"] is sweep_remote.remote_logged
    assert sweep.kind_of(sweep.SCENARIOS["remote-logged"]) == "remote-code"


def test_same_call_twice_passes_on_llama_and_fails_on_a_forward_that_writes_into_its_positions(monkeypatch):
    subject = sweep.Subject("llama")
    scenario = sweep.SCENARIOS["same-call-twice"]
    good = sweep.observe(scenario, subject)
    assert good.outcome == "pass", good.message
    original = subject.model.forward

    def forward(*args, position_ids=None, **kwargs):
        if position_ids is not None:
            position_ids += 2  # what XGLM's positional embedding did before 5.3
        return original(*args, position_ids=position_ids, **kwargs)

    monkeypatch.setattr(subject.model, "forward", forward)
    bad = sweep.observe(scenario, subject)
    assert bad.outcome == "wrong" and "position_ids" in bad.message, bad.message


def test_same_call_twice_finds_xglm_writing_into_position_ids_where_the_release_does():
    ours, without = with_and_without("same-call-twice", sweep.Subject("xglm"), "model-xglm-positions")
    assert ours.outcome == "pass", ours.message
    if RELEASE < Version("5.3.0"):
        assert without.outcome == "wrong" and "position_ids" in without.message, without.message
    else:
        assert without.outcome == "pass"


def test_the_formatting_handler_lets_a_malformed_call_out_and_restores_the_logger():
    root = logging.getLogger("transformers")
    handlers, level = list(root.handlers), root.level
    child = logging.getLogger("transformers.hf_genfix_test")
    with sweep_remote._formatting_every_record():
        child.warning("well formed %s", "call")
        with pytest.raises(TypeError, match="not all arguments converted"):
            child.warning("a message without placeholders", FutureWarning)  # 5.2.0's deprecation call
    assert root.handlers == handlers and root.level == level  # (pytest's own capture would raise too: not tried)


@pytest.mark.skipif(not Version("5.2.0") <= RELEASE < Version("5.3.0"), reason="the malformed call is 5.2's")
def test_remote_logged_finds_the_mask_warning_defect_on_5_2():
    subject = sweep_remote.RemoteSubject("remote-deepseek")
    ours, without = with_and_without("remote-logged", subject, "remote-code-mask-warning")
    assert ours.outcome == "pass", ours.message
    assert without.outcome == "raised" and "not all arguments converted" in without.message, without.message
