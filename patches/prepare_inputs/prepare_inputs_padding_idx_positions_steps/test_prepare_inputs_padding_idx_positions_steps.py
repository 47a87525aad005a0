"""``prepare-inputs-padding-idx-positions-steps``: the checks every patch owes (hf_genfix.testing.patches.PatchTests),
the other RoBERTa-style decoders, a hand-written loop, and the calls it must leave as upstream makes them."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_genfix._patches.prepare_inputs.shared.padding_idx_positions_probes import (  # noqa: E402
    ROBERTA_STYLE, greedy, same_run, scenario_both_ways)
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PATCH = "prepare-inputs-padding-idx-positions-steps"


class TestPatch(PatchTests):
    """``prepare-inputs-padding-idx-positions-steps``: its probe proves it on this release; its plain program installs
    it."""


@pytest.mark.parametrize("model_type", ROBERTA_STYLE)
def test_each_roberta_style_decoder_generates_its_own_positions(model_type, require_applied):
    """The sweep's equivalences on each model of the class that uses the generic hook: wrong without the patch
    (units, not rounding), right with it."""
    require_applied(PATCH)
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep.bert_decoders import BertDecoderSubject

    try:
        subject = BertDecoderSubject(model_type)
    except ProbeSkipped as exc:
        pytest.skip(f"{model_type}: {exc}")
    if "prepare_inputs_for_generation" in vars(type(subject.model)):
        pytest.skip(f"{model_type} has its own prepare_inputs_for_generation here (XLM-RoBERTa-XL up to 4.57)")
    for name in ("bert-decoder-cached", "bert-decoder-uncached", "bert-decoder-left-padded"):
        without, with_patch = scenario_both_ways(PATCH, subject, name)
        assert without > 0.5 and with_patch < 1e-4, (name, without, with_patch)


def test_a_model_that_numbers_from_zero_is_left_as_upstream_has_it(require_applied):
    """BERT numbers its positions from 0 as generate() does: bitwise upstream's, and the run changes nothing (the
    sweep's differential need not run it again)."""
    require_applied(PATCH)
    import hf_genfix
    from hf_genfix.oracles.sweep.bert_decoders import BertDecoderSubject

    model = BertDecoderSubject("bert").model
    with hf_genfix.recording() as log:
        ours = greedy(model)
    with hf_genfix.disabled(PATCH):
        upstream = greedy(model)
    assert same_run(ours, upstream)
    seen, changed = log.counts.get(PATCH, (0, 0))
    assert seen > 0 and changed == 0


def test_a_hand_written_loop_gets_the_models_numbering(require_applied):
    """prepare_inputs_for_generation called by hand with the grown mask and the cache, then forward: each step's
    logits are the no-cache forward's of the unpadded row (the model's own numbering), as generate()'s are."""
    require_applied(PATCH)
    import torch

    import hf_genfix
    from hf_genfix._patches.prepare_inputs.shared.padding_idx_positions_probes import tiny_roberta_decoder

    model = tiny_roberta_decoder()
    row = [5, 6, 7]

    def loop():
        ids = torch.tensor([[1, 1] + row])
        mask = (ids != 1).long()
        cache, logits = None, []
        with torch.no_grad():
            for _ in range(3):
                inputs = model.prepare_inputs_for_generation(ids, past_key_values=cache, attention_mask=mask,
                                                             use_cache=True)
                out = model(**inputs)
                cache, step = out.past_key_values, out.logits[:, -1]
                logits.append(step)
                token = step.argmax(-1, keepdim=True).clamp(min=2)
                ids, mask = torch.cat([ids, token], -1), torch.cat([mask, torch.ones_like(token)], -1)
        return ids, logits

    ids, ours = loop()
    with torch.no_grad():
        reference = model(ids[:, 2:]).logits[0]  # the unpadded row, no cache: the model's own positions
    for step, got in enumerate(ours):
        assert (got[0] - reference[len(row) - 1 + step]).abs().max() < 1e-4
    with hf_genfix.disabled(PATCH):
        _, upstream = loop()
    assert max((u[0] - reference[len(row) - 1 + i]).abs().max() for i, u in enumerate(upstream)) > 0.5


def test_positions_the_caller_gives_are_the_callers(require_applied):
    """prepare_inputs_for_generation(position_ids=...): the caller's positions, exactly upstream's inputs."""
    require_applied(PATCH)
    import torch

    import hf_genfix
    from hf_genfix._patches.prepare_inputs.shared.padding_idx_positions_probes import tiny_roberta_decoder

    model = tiny_roberta_decoder()
    ids = torch.tensor([[1, 1, 5, 6, 7]])
    given = torch.tensor([[9, 9, 9, 9, 9]])
    kwargs = dict(attention_mask=(ids != 1).long(), position_ids=given)
    ours = model.prepare_inputs_for_generation(ids, **kwargs)
    with hf_genfix.disabled(PATCH):
        upstream = model.prepare_inputs_for_generation(ids, **kwargs)
    assert torch.equal(ours["position_ids"], upstream["position_ids"])
    assert torch.equal(ours["position_ids"], given)
