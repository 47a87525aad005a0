"""``model-xlstm-continuation`` (5.2-5.4): generate() continuing an xLSTM cache passed as ``cache_params`` feeds the
tokens the cache has not taken in.

Where the patch is applied: a second turn matches a no-cache forward of the conversation (and is wrong with the
patch off); a first turn and plain decoding are bitwise upstream's. Elsewhere the tests skip (``PatchTests``).
"""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise  # noqa: E402

PID = "model-xlstm-continuation"


class TestPatch(PatchTests):
    """``model-xlstm-continuation``: its probe proves it on this release; its plain program gets it installed."""


@pytest.fixture
def xlstm(require_applied):
    from hf_genfix.oracles.sweep.continuations import loud_model

    require_applied(PID)
    return loud_model("xlstm")


def _second_turn(model):
    """The first logits of a second turn continuing the first turn's cache, and a no-cache forward's."""
    import torch

    ids = torch.tensor([[3, 14, 15, 92, 65, 35, 89, 79, 32, 38]])
    common = dict(do_sample=False, pad_token_id=0, eos_token_id=None, return_dict_in_generate=True)
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=3, **common)
        more = torch.cat([out.sequences, torch.tensor([[20, 21, 22]])], dim=1)
        second = model.generate(more, cache_params=copy.deepcopy(out.past_key_values), max_new_tokens=1,
                                output_logits=True, **common)
        reference = model(more, use_cache=False).logits[:, -1]
    return (second.logits[0] - reference).abs().max().item()


def test_a_second_turn_matches_a_no_cache_forward(xlstm):
    assert _second_turn(xlstm) < 1e-4
    with hf_genfix.disabled(PID):
        assert _second_turn(xlstm) > 1e-2  # the defect, loud on this model


def test_a_first_turn_is_upstream_bitwise(xlstm):
    import torch

    assert_upstream_bitwise(xlstm, PID, torch.tensor([[3, 14, 15, 92, 65, 35, 89, 79]]))
