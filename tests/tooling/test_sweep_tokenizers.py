"""The sweep's tokenizer kind (``oracles.sweep.tokenizers``): its scenarios pass with hf_genfix, show the tokenizer
and collator defects without it where a release has them, and recall can attribute them.

The oracle is the definition, not a snapshot: each text's no-cache forward alone; the collator's labels are the
ids at the real positions. A layout whose pad is not its eos (Qwen2) passes the collator scenario with every patch
off too: the oracle accepts what is right, and (Llama-3, pad == eos) rejects what is not.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved  # noqa: E402
from hf_genfix.oracles.sweep import SCENARIOS, kinds_of  # noqa: E402
from hf_genfix.oracles.sweep.tokenizers import TokenizerSubject  # noqa: E402


def _installed(pid: str) -> bool:
    from hf_genfix.doctor import import_targets

    import_targets()
    return next(s for s in hf_genfix.status() if s.id == pid).state in ("applied", "forced")


def test_the_kind_lists_every_local_layout_and_doctor_accepts_them():
    from hf_genfix.doctor import sweep_problem

    kinds = kinds_of()
    assert {t for t, k in kinds.items() if k == "tokenizer"} >= {"tokenizer-llama3", "tokenizer-mistral"}
    assert sweep_problem(["tokenizer-llama3", "remote-chatglm3"], ["tokenizer-collator"]) is None


@pytest.mark.parametrize("layout", ["llama3", "qwen2"])
def test_collator_labels_every_real_token_with_hf_genfix(layout):
    assert SCENARIOS["tokenizer-collator"](TokenizerSubject("tokenizer-" + layout))["labels"] > 0


def test_collator_without_hf_genfix_drops_the_real_eos_labels_where_pad_is_eos():
    if not _installed("pad-token-collator"):
        pytest.skip("pad-token-collator is not installed on this release")
    subject = TokenizerSubject("tokenizer-llama3")
    with hf_genfix.disabled(), pytest.raises(DefectObserved, match="real token"):
        SCENARIOS["tokenizer-collator"](subject)
    with hf_genfix.disabled():  # pad != eos: right without any patch
        SCENARIOS["tokenizer-collator"](TokenizerSubject("tokenizer-qwen2"))


@pytest.mark.parametrize("layout", ["llama3", "mistral", "gemma"])
def test_a_tokenizers_padded_batch_generates_each_row_as_alone(layout):
    figures = SCENARIOS["tokenizer-batch"](TokenizerSubject("tokenizer-" + layout))
    assert figures["max_logit_diff"] <= 1e-4
