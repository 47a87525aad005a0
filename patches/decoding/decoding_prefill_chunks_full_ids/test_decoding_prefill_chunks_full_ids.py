"""decoding-prefill-chunks-full-ids (4.54-4.57): generate(prefill_chunk_size=k) on a model that slices the ids by
its cache's length (CTRL) gives what a no-cache forward gives.

Where the patch is applied: the sweep's chunked-prefill scenario on CTRL matches the no-cache forward of the row
(and does not with the patch off); Llama (generate()'s own method) and a padded CTRL batch keep upstream's loop,
bitwise; a model of this kind that does not feed a chunk whole gets a clear error, not a wrong prefill. Elsewhere
the tests skip.
"""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved  # noqa: E402
from hf_genfix.oracles.sweep import SCENARIOS  # noqa: E402
from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise  # noqa: E402

PID = "decoding-prefill-chunks-full-ids"


@pytest.fixture
def subject(require_applied):
    """The sweep's CTRL (its tame weights: the sweep's own finding, 0.0585 without the patch)."""
    from hf_genfix.oracles.sweep import Subject

    require_applied(PID)
    return Subject("ctrl")


def test_ctrl_chunked_prefill_matches_the_no_cache_forward(subject):
    assert SCENARIOS["chunked-prefill"](subject)["max_logit_diff"] <= 1e-4


def test_without_the_patch_the_chunks_lose_their_tokens(subject):
    with hf_genfix.disabled(PID), pytest.raises((DefectObserved, RuntimeError)) as caught:
        SCENARIOS["chunked-prefill"](subject)
    if isinstance(caught.value, DefectObserved):  # 4.54-4.56: silently wrong (4.57: a shape error)
        assert caught.value.figures["max_logit_diff"] > 0.01


@pytest.mark.parametrize("model_type, padded", [("llama", False), ("ctrl", True)])
def test_what_upstream_chunks_itself_is_bitwise_upstream(require_applied, tiny, model_type, padded):
    """generate()'s own method (llama) and a padded batch (down to padding-prefill-chunks or upstream) are not
    this patch's: the same sequences and logits with it off."""
    import torch

    require_applied(PID)
    ids = torch.arange(3, 16).repeat(2, 1)
    mask = torch.ones_like(ids)
    if padded:
        mask[1, :4] = 0
    model = tiny(model_type)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with hf_genfix.disabled(PID), torch.no_grad():
                model.generate(ids, attention_mask=mask, prefill_chunk_size=4, max_new_tokens=2, do_sample=False,
                               pad_token_id=0)
        except RuntimeError as exc:  # 4.57's padded CTRL: upstream's shape error, left to upstream
            with pytest.raises(type(exc)), torch.no_grad():
                model.generate(ids, attention_mask=mask, prefill_chunk_size=4, max_new_tokens=2, do_sample=False,
                               pad_token_id=0)
            return
        assert_upstream_bitwise(model, PID, ids, attention_mask=mask, prefill_chunk_size=4)


def test_a_model_that_does_not_feed_the_chunk_gets_an_error(subject):
    """A method that names no cache_position but does not slice by the cache's length either (here: always the
    last token) is a contract the patch does not know: ValueError, not a silently wrong prefill."""
    import torch

    model = subject.model
    base = type(model)

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, use_cache=None, **kwargs):
        return {"input_ids": input_ids[:, -1:], "past_key_values": past_key_values, "use_cache": use_cache}

    model.__class__ = type("LastTokenCTRL", (base,), {"prepare_inputs_for_generation": prepare_inputs_for_generation,
                                                      "__module__": base.__module__})
    ids = torch.arange(3, 16)[None]
    with pytest.raises(ValueError, match="neither cache_position nor the full ids"), torch.no_grad():
        model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False,
                       prefill_chunk_size=4, pad_token_id=0)


def test_a_model_that_feeds_what_it_is_handed_gets_upstreams_call(subject):
    """A method that names no cache_position and slices nothing: upstream's loop hands it each chunk, which it
    feeds whole; the patch makes the same call, never the prefix (bitwise the same generation, whatever its
    decoding steps, which feed the whole sequence again, are worth)."""
    import torch

    model = subject.model
    base = type(model)
    handed = []

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, use_cache=None, **kwargs):
        handed.append(input_ids.shape[-1])
        return {"input_ids": input_ids, "past_key_values": past_key_values, "use_cache": use_cache}

    model.__class__ = type("HandedCTRL", (base,), {"prepare_inputs_for_generation": prepare_inputs_for_generation,
                                                   "__module__": base.__module__})
    ids = torch.arange(3, 16)[None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_upstream_bitwise(model, PID, ids, attention_mask=torch.ones_like(ids), prefill_chunk_size=4)
    assert 12 not in handed  # the prefix before the last chunk is never handed over (chunks of 4 over 12 tokens)


class TestPatch(PatchTests):
    """``decoding-prefill-chunks-full-ids``: its probe proves it on this release; its plain program gets it
    installed."""
