"""``prepare-inputs-padding-idx-positions``: the checks every patch owes (hf_genfix.testing.patches.PatchTests), the
other RoBERTa-style decoders, and the calls it must leave as upstream makes them."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_genfix._patches.prepare_inputs.shared.padding_idx_positions_probes import (  # noqa: E402
    ROBERTA_STYLE, greedy, same_run, scenario_both_ways)
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PATCH = "prepare-inputs-padding-idx-positions"


class TestPatch(PatchTests):
    """``prepare-inputs-padding-idx-positions``: its probe proves it on this release; its plain program installs
    it."""


@pytest.mark.parametrize("model_type", ROBERTA_STYLE)
def test_each_roberta_style_decoder_generates_its_own_positions(model_type, require_applied):
    """The sweep's cached and uncached equivalences on each model of the class: wrong without the patch (units, not
    rounding), right with it."""
    require_applied(PATCH)
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep.bert_decoders import BertDecoderSubject

    try:
        subject = BertDecoderSubject(model_type)
    except ProbeSkipped as exc:
        pytest.skip(f"{model_type}: {exc}")
    for name in ("bert-decoder-cached", "bert-decoder-uncached"):
        without, with_patch = scenario_both_ways(PATCH, subject, name)
        assert without > 0.5 and with_patch < 1e-4, (name, without, with_patch)


def test_a_model_that_numbers_from_zero_is_left_as_upstream_has_it(require_applied):
    """BERT numbers its positions from 0 as generate() does: bitwise upstream's, and the run reaches nothing (the
    sweep's differential need not run it again)."""
    require_applied(PATCH)
    import hf_genfix
    from hf_genfix import _patcher
    from hf_genfix.oracles.sweep.bert_decoders import BertDecoderSubject

    model = BertDecoderSubject("bert").model
    with _patcher.watching() as reached:
        ours = greedy(model)
    with hf_genfix.disabled(PATCH):
        upstream = greedy(model)
    assert same_run(ours, upstream)
    assert PATCH not in reached


def test_positions_the_caller_gives_are_the_callers(require_applied):
    """generate(position_ids=...) makes none: the patch is not called, and the answer is upstream's."""
    require_applied(PATCH)
    import torch

    import hf_genfix
    from hf_genfix._patches.prepare_inputs.shared.padding_idx_positions_probes import tiny_roberta_decoder

    model = tiny_roberta_decoder()
    given = torch.tensor([[1, 1, 2, 3, 4], [2, 3, 4, 5, 6]])
    ours = greedy(model, position_ids=given)
    with hf_genfix.disabled(PATCH):
        upstream = greedy(model, position_ids=given)
    assert same_run(ours, upstream)


def test_renumbering_follows_the_mask(require_applied):
    """Real tokens from padding_idx + 1 in order, pads at padding_idx; no mask: every token real; a mask that does
    not match the positions: upstream's positions."""
    require_applied(PATCH)
    import torch

    from hf_genfix._patches.prepare_inputs.prepare_inputs_padding_idx_positions.fix import _prepare_position_ids

    class Embeddings:  # what the wrapper reads of a RoBERTa-style model's embeddings
        padding_idx = 1
        position_embeddings = None

        @staticmethod
        def create_position_ids_from_input_ids(*args):
            return None

        def forward(self, input_ids):  # the call the wrapper looks for in the embeddings' code
            return self.create_position_ids_from_input_ids(input_ids, self.padding_idx)

    class Base:
        embeddings = Embeddings()

    class Model:
        base_model = Base()

    def upstream(inputs_tensor, model_kwargs):
        mask = model_kwargs.get("attention_mask")
        if mask is None:
            return torch.arange(inputs_tensor.shape[1]).unsqueeze(0)
        return (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)

    ids = torch.zeros(2, 4, dtype=torch.long)
    mask = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    got = _prepare_position_ids(upstream, Model(), (ids, {"attention_mask": mask}), {})
    assert got.tolist() == [[1, 1, 2, 3], [2, 3, 4, 5]]
    assert _prepare_position_ids(upstream, Model(), (ids[:1], {}), {}).tolist() == [[2, 3, 4, 5]]
    odd = torch.ones(2, 3, dtype=torch.long)  # does not cover the positions: left as upstream made them
    assert _prepare_position_ids(lambda *a: upstream(ids, {"attention_mask": mask}), Model(),
                                 (ids, {"attention_mask": odd}), {}).tolist() == [[0, 0, 0, 1], [0, 1, 2, 3]]
