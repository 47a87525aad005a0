"""The sweep's remote-stream scenario: a remote family's own decoding loop (ChatGLM's stream_generate) decodes as
greedy no-cache forwards do, with hf_genfix; families without such a loop skip it."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_genfix.oracles import ProbeSkipped  # noqa: E402
from hf_genfix.oracles.sweep import SCENARIOS  # noqa: E402
from hf_genfix.oracles.sweep_remote import RemoteSubject  # noqa: E402


def test_chatglm3s_own_loop_decodes_greedily():
    figures = SCENARIOS["remote-stream"](RemoteSubject("remote-chatglm3"))
    assert len(figures["stream_sequences"][0]) == 4


def test_a_family_without_a_loop_skips():
    with pytest.raises(ProbeSkipped, match="no decoding loop"):
        SCENARIOS["remote-stream"](RemoteSubject("remote-phi3"))
