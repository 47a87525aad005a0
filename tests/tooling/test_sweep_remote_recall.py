"""The sweep's remote scenarios added for recall (issue 36): remote-stream (a family's own decoding loop, ChatGLM's
stream_generate, decodes as greedy no-cache forwards do; families without one skip it), remote-reload (save ->
reload gives the saved model back) and remote-second-load (a second load of a repo generates as the first), each
with hf_genfix."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_genfix.oracles import ProbeSkipped  # noqa: E402
from hf_genfix.oracles.sweep import SCENARIOS  # noqa: E402
from hf_genfix.oracles.sweep.remote import RemoteSubject  # noqa: E402


def test_chatglm3s_own_loop_decodes_greedily():
    figures = SCENARIOS["remote-stream"](RemoteSubject("remote-chatglm3"))
    assert len(figures["stream_sequences"][0]) == 4


def test_a_family_without_a_loop_skips():
    with pytest.raises(ProbeSkipped, match="no decoding loop"):
        SCENARIOS["remote-stream"](RemoteSubject("remote-phi3"))


@pytest.mark.parametrize("family", ["phi3", "chatglm3"])
def test_a_saved_remote_model_loads_back_as_it_was(family):
    figures = SCENARIOS["remote-reload"](RemoteSubject("remote-" + family))
    assert figures["max_logit_diff"] <= 1e-4


def test_a_second_load_of_a_repo_generates_as_the_first():
    assert SCENARIOS["remote-second-load"](RemoteSubject("remote-internlm2"))


def test_the_moe_layout_reloads_on_the_deepseek_subject_only():
    assert SCENARIOS["remote-reload-moe"](RemoteSubject("remote-deepseek"))["max_logit_diff"] <= 1e-4
    with pytest.raises(ProbeSkipped, match="deepseek"):
        SCENARIOS["remote-reload-moe"](RemoteSubject("remote-phi3"))
