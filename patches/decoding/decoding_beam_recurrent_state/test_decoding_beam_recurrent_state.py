"""``decoding-beam-recurrent-state``: beam search with a cache on a state-space model gives what it gives without a
cache where the release would reorder the wrong beams' states (a state the caller gives is refused in words);
without a cache, or on an attention model, it is upstream's bitwise."""

import warnings

import pytest

import hf_genfix
from hf_genfix.testing.patches import PatchTests

PID = "decoding-beam-recurrent-state"


def _subject(model_type):
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep import Subject

    try:
        return Subject(model_type)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("model_type", ["mamba", "rwkv"])
def test_beam_search_with_a_cache_is_the_beam_search_without(require_applied, model_type):
    import torch

    from hf_genfix import HFGenfixWarning
    from hf_genfix.toolkit import forget_warnings

    require_applied(PID)
    model = _subject(model_type).model
    ids = torch.tensor([[5, 6, 7, 8, 9, 10]])
    options = dict(num_beams=3, max_new_tokens=4, do_sample=False, pad_token_id=0, eos_token_id=None)
    forget_warnings(PID)
    with torch.no_grad():
        with pytest.warns(HFGenfixWarning, match="without the cache") as said:
            cached = model.generate(ids, **options)
        uncached = model.generate(ids, use_cache=False, **options)
    assert torch.equal(cached, uncached)
    # the warning names the user's line (the generate call), not a frame of hf_genfix, transformers or torch
    assert [w.filename for w in said if issubclass(w.category, HFGenfixWarning)] == [__file__]


def test_a_state_given_by_the_caller_is_refused_in_words(require_applied):
    import torch

    from hf_genfix._patches.decoding.decoding_beam_recurrent_state.fix import BeamSearchStateNotReordered

    require_applied(PID)
    model = _subject("mamba").model
    ids = torch.tensor([[5, 6, 7, 8, 9, 10]])
    with torch.no_grad():
        state = model(ids[:, :4], use_cache=True).cache_params
        with pytest.raises(BeamSearchStateNotReordered, match=rf"{type(model).__name__}.*use_cache=False"):
            model.generate(ids, cache_params=state, num_beams=3, max_new_tokens=3, do_sample=False,
                           pad_token_id=0, eos_token_id=None)


def test_without_the_patch_the_beams_differ_from_no_cache(require_applied):
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.sweep import SCENARIOS

    require_applied(PID)
    subject = _subject("mamba")
    with hf_genfix.disabled(), warnings.catch_warnings(), pytest.raises(DefectObserved, match="beam search"):
        warnings.simplefilter("ignore")
        SCENARIOS["beam-loud"](subject)


@pytest.mark.parametrize("model_type", ["mamba", "llama"])
def test_without_a_cache_or_on_attention_it_is_upstreams_bitwise(require_applied, model_type):
    import torch

    require_applied(PID)
    model = _subject(model_type).model
    ids = torch.tensor([[5, 6, 7, 8, 9, 10]])
    options = dict(num_beams=3, max_new_tokens=4, do_sample=False, pad_token_id=0, eos_token_id=None,
                   use_cache=model_type != "mamba")
    with torch.no_grad():
        ours = model.generate(ids, **options)
        with hf_genfix.disabled(PID):
            theirs = model.generate(ids, **options)
    assert torch.equal(ours, theirs)


class TestPatch(PatchTests):
    """``decoding-beam-recurrent-state``: its probe proves it on this release; its plain program gets it installed."""
