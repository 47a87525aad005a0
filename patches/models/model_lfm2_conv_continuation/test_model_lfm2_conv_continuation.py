"""``model-lfm2-conv-continuation`` (4.54-5.14): several tokens after a cache go through the short convolution's
one-token path one at a time; assisted decoding is refused where the window cannot be rolled back (before 5.13).

Where the patch is applied: a chunk after a cache matches a no-cache forward (and is wrong with the patch off); a
prompt, plain decoding and a left-padded batch's first turn are bitwise upstream's; a chunk whose mask has a hole is
upstream's where the layer never masks (4.x) and a no-cache forward's on 5.x. Elsewhere the tests skip
(``PatchTests``: the probe and the plain program).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix import catalog  # noqa: E402
from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise  # noqa: E402

PID = "model-lfm2-conv-continuation"


class TestPatch(PatchTests):
    """``model-lfm2-conv-continuation``: its probe proves it on this release; its plain program gets it installed."""


@pytest.fixture
def lfm2(require_applied):
    from hf_genfix.oracles.sweep.continuations import loud_model

    require_applied(PID)
    return loud_model("lfm2")


def _chunk_after_cache(model, chunk_width):
    """Logits of a chunk fed after a 10-token prompt's cache, and of a no-cache forward of the whole sequence."""
    import torch

    gen = torch.Generator().manual_seed(5)
    ids = torch.randint(3, 128, (1, 10 + chunk_width), generator=gen)
    with torch.no_grad():
        full = model(ids, use_cache=False).logits
        first = model(ids[:, :10], use_cache=True)
        chunk = model(ids[:, 10:], past_key_values=first.past_key_values, use_cache=True,
                      attention_mask=torch.ones_like(ids)).logits
    return chunk, full[:, 10:]


def test_a_chunk_after_a_cache_matches_a_no_cache_forward(lfm2):
    chunk, reference = _chunk_after_cache(lfm2, 4)
    assert (chunk - reference).abs().max().item() < 1e-4
    with hf_genfix.disabled(PID):
        wrong, reference = _chunk_after_cache(lfm2, 4)
    assert (wrong - reference).abs().max().item() > 1e-2  # the defect, loud on this model


def test_plain_decoding_and_a_padded_batch_are_upstream_bitwise(lfm2):
    import torch

    ids = torch.tensor([[0, 0, 5, 6, 7, 8], [3, 4, 5, 6, 7, 8]])
    mask = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
    assert_upstream_bitwise(lfm2, PID, ids, attention_mask=mask)
    assert_upstream_bitwise(lfm2, PID, ids[1:], attention_mask=mask[1:])


def test_a_chunk_with_a_hole_in_its_mask(lfm2):
    """4.54-4.57 (whose layer never masks): upstream's, bitwise. 5.x: what a no-cache forward of the same ids and
    mask gives (one row: the layer masks nothing there either)."""
    import torch
    import transformers
    from packaging.version import Version

    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]])
    mask = torch.ones_like(ids)
    mask[0, 11] = 0

    def chunk():
        with torch.no_grad():
            first = lfm2(ids[:, :10], attention_mask=mask[:, :10], use_cache=True)
            try:
                return lfm2(ids[:, 10:], past_key_values=first.past_key_values, use_cache=True,
                            attention_mask=mask).logits
            except RuntimeError as exc:  # upstream's own shape error for some releases' masks
                return type(exc)

    ours = chunk()
    if Version(transformers.__version__) < Version("5.0.0"):
        with hf_genfix.disabled(PID):
            upstream = chunk()
        assert ours is upstream if isinstance(ours, type) else torch.equal(ours, upstream)
    else:
        with torch.no_grad():
            reference = lfm2(ids, attention_mask=mask, use_cache=False).logits[:, 10:]
        assert (ours - reference).abs().max().item() < 1e-4


def test_assisted_decoding_is_refused_with_the_switch_where_the_window_cannot_roll_back(lfm2):
    import torch

    if getattr(type(lfm2), "_is_stateful", False):
        pytest.skip("this release refuses assisted decoding of LFM2 itself (5.13-5.14)")
    refusal = catalog.fix(PID).Lfm2AssistedUnsupported
    ids = torch.tensor([[3, 4, 5, 3, 4, 5, 3, 4, 5]])
    with pytest.raises(refusal, match="HF_GENFIX_MODEL_LFM2_CONV_CONTINUATION=off"), torch.no_grad():
        lfm2.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=4, do_sample=False,
                      prompt_lookup_num_tokens=2, pad_token_id=0)
    assert issubclass(refusal, ValueError)
    with hf_genfix.disabled(PID), torch.no_grad():  # upstream's (silently wrong) answer, as the switch says
        lfm2.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=4, do_sample=False,
                      prompt_lookup_num_tokens=2, pad_token_id=0)
