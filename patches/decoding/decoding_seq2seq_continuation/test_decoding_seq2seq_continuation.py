"""decoding-seq2seq-continuation (5.3+): an encoder-decoder generate() that continues from a cache gets what a
no-cache forward of the whole decoder sequence gives.

Where the patch is applied: BART's and T5's second turn from ``out.past_key_values`` and a reused decoder prefix
(one encoder row and a right-padded encoder batch) match the oracle, and do not with the patch off. Where upstream
is right or the call is not the patch's to change (no cache, a decoder mask given, a decoder sequence no longer than
the cache, FSMT), the outputs are upstream's, bitwise. Elsewhere the tests skip.
"""

from __future__ import annotations

import copy
import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles.sweep import SCENARIOS  # noqa: E402
from hf_genfix.oracles.sweep.families import Seq2SeqSubject  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PID = "decoding-seq2seq-continuation"


@pytest.fixture(scope="module")
def applied(require_applied):
    require_applied(PID)
    return PID


def _subject(model_type):
    try:
        return Seq2SeqSubject(model_type)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module", params=["bart", "t5"])
def subject(request, applied):
    return _subject(request.param)


@pytest.mark.parametrize("scenario", ["s2s-second-turn", "s2s-prefix-reuse"])
def test_a_continuation_matches_the_no_cache_forward(subject, scenario):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert SCENARIOS[scenario](subject)["max_logit_diff"] <= 1e-4


@pytest.mark.parametrize("scenario", ["s2s-second-turn", "s2s-prefix-reuse"])
def test_without_the_patch_the_cached_tokens_are_fed_again(subject, scenario):
    with warnings.catch_warnings(), hf_genfix.disabled(PID):
        warnings.simplefilter("ignore")
        with pytest.raises(DefectObserved) as caught:
            SCENARIOS[scenario](subject)
    assert caught.value.figures["max_logit_diff"] > 0.05


def _generate(model, **options):
    import torch

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model.generate(max_new_tokens=3, do_sample=False, output_logits=True, return_dict_in_generate=True,
                             pad_token_id=0, eos_token_id=None, **options)
    return out.sequences, torch.stack(out.logits)


def _bitwise(model, **options):
    """The call with the patch and without it (each from its own copy of any cache) gives the same outputs."""
    import torch

    cache = options.pop("past_key_values", None)
    mine = dict(options, **({"past_key_values": copy.deepcopy(cache)} if cache is not None else {}))
    ours = _generate(model, **mine)
    with hf_genfix.disabled(PID):
        theirs = _generate(model, **dict(options, **({"past_key_values": copy.deepcopy(cache)}
                                                     if cache is not None else {})))
    assert torch.equal(ours[0], theirs[0]) and torch.equal(ours[1], theirs[1])


def _first_turn(model):
    import torch

    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9]])
    mask = torch.ones_like(ids)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model.generate(ids, attention_mask=mask, max_new_tokens=3, min_new_tokens=3, do_sample=False,
                             pad_token_id=0, eos_token_id=None, return_dict_in_generate=True)
    return ids, mask, out


def test_a_call_without_a_cache_is_upstreams(subject):
    import torch

    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9]])
    _bitwise(subject.model, input_ids=ids, attention_mask=torch.ones_like(ids))


def test_a_decoder_mask_is_upstreams_own_cut(subject):
    """With a decoder mask as wide as the decoder ids, upstream cuts them itself: the call is left as it is."""
    import torch

    ids, mask, out = _first_turn(subject.model)
    decoder = torch.cat([out.sequences, torch.tensor([[11, 12]])], dim=1)
    _bitwise(subject.model, input_ids=ids, attention_mask=mask, decoder_input_ids=decoder,
             decoder_attention_mask=torch.ones_like(decoder), past_key_values=out.past_key_values)


def test_a_decoder_sequence_no_longer_than_the_cache_is_upstreams(subject):
    """Decoder ids no longer than the cache cannot be the whole sequence: not a guess the patch makes."""
    import torch

    ids, mask, out = _first_turn(subject.model)
    start = int(out.sequences[0, 0])
    _bitwise(subject.model, input_ids=ids, attention_mask=mask, decoder_input_ids=torch.tensor([[start, 11]]),
             past_key_values=out.past_key_values)


def test_fsmt_keeps_upstreams_call(applied):
    """FSMT's decoder cannot take several tokens after a cache: cutting its sequence would give another wrong
    answer, so the call stays upstream's."""
    import torch

    model = _subject("fsmt").model
    ids, mask, out = _first_turn(model)
    decoder = torch.cat([out.sequences, torch.tensor([[11, 12]])], dim=1)
    _bitwise(model, input_ids=ids, attention_mask=mask, decoder_input_ids=decoder,
             past_key_values=out.past_key_values)


class TestPatch(PatchTests):
    """``decoding-seq2seq-continuation``: its probe proves it on this release; its plain program gets it installed."""
