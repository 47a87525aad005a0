"""decoding-beam-recurrent-gemma: beam search with the cache on RecurrentGemma gives what it gives without it.

Where the patch is applied: the probe's loud RecurrentGemma gives the same beams with and without the cache (not
with the patch off), the switch is said once, a call after one with another number of rows runs, a cache holding a
past is refused in words; greedy search and other models are upstream's, bitwise. Elsewhere the tests skip.
"""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PID = "decoding-beam-recurrent-gemma"


@pytest.fixture(scope="module")
def model(require_applied):
    from hf_genfix import catalog

    require_applied(PID)
    return catalog.probe_module(PID).tiny()


def _beams(model, use_cache=True, rows=1):
    from hf_genfix import catalog

    beams = catalog.probe_module(PID).beams
    if rows == 1:
        return beams(model, use_cache)
    import torch

    ids = torch.arange(3, 12).repeat(rows, 1)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=2, do_sample=False,
                              use_cache=use_cache, pad_token_id=0, eos_token_id=None)


def test_beams_with_the_cache_are_the_beams_without_it(model):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.equal(_beams(model, True), _beams(model, False))


def test_without_the_patch_the_beams_differ(model):
    from hf_genfix import catalog

    with hf_genfix.disabled(PID), pytest.raises(DefectObserved):
        catalog.probe(PID)()


def test_the_patch_says_so_once(model):
    from hf_genfix import HFGenfixWarning
    from hf_genfix.toolkit import forget_warnings

    import torch

    forget_warnings(PID)
    ids = torch.tensor([[3, 4, 5, 6, 7]])
    with pytest.warns(HFGenfixWarning, match="without the cache"), torch.no_grad():
        model.generate(ids, attention_mask=torch.ones_like(ids), num_beams=2, max_new_tokens=2, do_sample=False,
                       pad_token_id=0, eos_token_id=None)


def test_a_call_after_another_number_of_rows_runs(model):
    """RecurrentGemma reads its module state even without a cache: one left by a 4-row call must not break it."""
    try:
        _beams(model, rows=4)
    except TypeError as exc:  # 4.46: no cached generate() at all (a keyword the model does not take)
        pytest.skip(f"a cached generate() raises here: {exc}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _beams(model)


def _outcome(func):
    try:
        return func()
    except Exception as exc:  # noqa: BLE001 - upstream's own exception must be hf_genfix's too
        return type(exc)


def test_greedy_search_is_upstreams(model):
    import torch

    ours = _outcome(lambda: _beams(model, rows=2))
    with hf_genfix.disabled(PID):
        theirs = _outcome(lambda: _beams(model, rows=2))
    assert ours == theirs if isinstance(ours, type) else torch.equal(ours, theirs)


def test_another_model_is_upstreams(require_applied):
    import torch

    from hf_genfix.oracles.tiny import tiny_model

    require_applied(PID)
    llama = tiny_model("llama")
    ids = torch.tensor([[3, 4, 5, 6, 7]])
    options = dict(attention_mask=torch.ones_like(ids), num_beams=3, max_new_tokens=4, do_sample=False,
                   pad_token_id=0, eos_token_id=None)
    with torch.no_grad():
        ours = llama.generate(ids, **options)
        with hf_genfix.disabled(PID):
            theirs = llama.generate(ids, **options)
    assert torch.equal(ours, theirs)


class TestPatch(PatchTests):
    """``decoding-beam-recurrent-gemma``: its probe proves it on this release; its plain program gets it installed."""
