"""decoding-inputs-embeds-penalty on the installed release: with inputs_embeds alone, repetition_penalty acts on
every generated token of every row, padded or not.

Oracle: each row's no-cache forward of its prompt and generated tokens, with the penalty applied by its definition
over the tokens that row generated before the step (the probe). Where upstream is right -- prompt ids given, no
padding, a processor the caller passed, an encoder-decoder model -- the output must be upstream's, bitwise, and the
patch must say it changed nothing.
"""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402

import hf_genfix  # noqa: E402
from hf_genfix import catalog  # noqa: E402
from hf_genfix.oracles import DefectObserved, tiny_model  # noqa: E402
from hf_genfix.oracles.generation import left_pad  # noqa: E402
from hf_genfix.oracles.tiny import calibrate  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

probe = catalog.probe_module("decoding-inputs-embeds-penalty").probe

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PID = "decoding-inputs-embeds-penalty"


@pytest.fixture(autouse=True)
def patches_decided():
    from hf_genfix.doctor import import_targets

    import_targets()


def _state() -> str:
    return next(s for s in hf_genfix.status() if s.id == PID).state


@pytest.fixture(scope="module")
def model():
    return calibrate(tiny_model("llama"))


ROWS = [[5, 9, 17, 33, 9, 40, 61, 7, 12], [44, 3, 90]]


def _scores(model, **kwargs):
    kwargs = dict(do_sample=False, max_new_tokens=6, return_dict_in_generate=True, output_scores=True,
                  pad_token_id=0, eos_token_id=None, **kwargs)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model.generate(**kwargs)
    return out.sequences, torch.stack(out.scores)


def test_probe_passes_with_and_fails_without():
    if _state() not in ("applied", "forced"):
        pytest.skip(f"{PID} is not installed on this release ({_state()})")
    assert probe()["steps"] >= 12
    with hf_genfix.disabled(PID), pytest.raises(DefectObserved):
        probe()


def check_unchanged(model, **kwargs):
    with hf_genfix.recording() as rec:
        with_patch = _scores(model, **kwargs)
    with hf_genfix.disabled(PID):
        without = _scores(model, **kwargs)
    assert torch.equal(with_patch[0], without[0])
    assert torch.equal(with_patch[1], without[1])
    assert not any(line.startswith(PID) and "repetition_penalty" in line for line in rec.lines), rec.lines


def test_prompt_ids_keep_upstreams_padding_lengths(model):
    ids, mask = left_pad(ROWS)
    check_unchanged(model, input_ids=ids, attention_mask=mask, repetition_penalty=1.8)


def test_ids_and_embeds_keep_upstreams_padding_lengths(model):
    ids, mask = left_pad(ROWS)
    embeds = model.get_input_embeddings()(ids).detach()
    check_unchanged(model, input_ids=ids, inputs_embeds=embeds, attention_mask=mask, repetition_penalty=1.8)


def test_unpadded_embeds_unchanged(model):
    ids, mask = left_pad([ROWS[0], ROWS[0][::-1]])
    embeds = model.get_input_embeddings()(ids).detach()
    check_unchanged(model, inputs_embeds=embeds, attention_mask=mask, repetition_penalty=1.8)


def test_callers_own_processor_left_alone(model):
    from transformers import LogitsProcessorList, RepetitionPenaltyLogitsProcessor

    ids, mask = left_pad(ROWS)
    embeds = model.get_input_embeddings()(ids).detach()
    try:
        own = RepetitionPenaltyLogitsProcessor(1.8, prompt_ignore_length=torch.tensor([0, 6]))
    except (TypeError, ValueError):  # 4.x: no such argument; 4.5x-5.22: an int only
        pytest.skip("this release's repetition penalty takes no per-row prompt_ignore_length")
    check_unchanged(model, inputs_embeds=embeds, attention_mask=mask, logits_processor=LogitsProcessorList([own]))


def test_padded_embeds_equal_rows_alone(model):
    """Independent of the probe's arithmetic: a padded row given as embeddings gets the tokens and scores it gets
    alone (an unpadded batch of one), with the penalty on."""
    ids, mask = left_pad(ROWS)
    embeds = model.get_input_embeddings()(ids).detach()
    seqs, scores = _scores(model, inputs_embeds=embeds, attention_mask=mask, repetition_penalty=1.8)
    for b, row in enumerate(ROWS):
        alone = torch.tensor([row])
        one_seqs, one_scores = _scores(model, inputs_embeds=model.get_input_embeddings()(alone).detach(),
                                       attention_mask=torch.ones_like(alone), repetition_penalty=1.8)
        assert seqs[b].tolist() == one_seqs[0].tolist()
        assert torch.allclose(scores[:, b], one_scores[:, 0], atol=1e-4), (scores[:, b] - one_scores[:, 0]).abs().max()


class TestPatch(PatchTests):
    """``decoding-inputs-embeds-penalty``: its probe proves it on this release; its plain program gets it installed."""
