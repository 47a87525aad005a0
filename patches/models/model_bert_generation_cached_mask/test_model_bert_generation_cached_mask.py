"""``model-bert-generation-cached-mask`` on the installed release: BertGeneration's cached forward gets the mask its
uncached forward makes.

Oracle: a no-cache forward of each unpadded row (``use_cache=False``, which makes the mask on every release). Where
upstream is right -- no cache, an encoder -- the answer must be upstream's, bitwise.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402

import hf_genfix  # noqa: E402
from hf_genfix.catalog import probe  # noqa: E402
from hf_genfix.oracles import DefectObserved  # noqa: E402
from hf_genfix.oracles.reference import reference_logits  # noqa: E402
from hf_genfix.oracles.sweep import build  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PID = "model-bert-generation-cached-mask"
ROWS = [[17, 44, 91, 23, 5, 60, 8, 71], [3, 9, 27, 81, 4], [33, 12, 90, 6, 50, 41]]


@pytest.fixture(scope="module")
def decoder():
    return build("bert-generation", seed=0, is_decoder=True)


def test_the_probe_fails_without_and_passes_with(require_applied):
    require_applied(PID)
    assert probe(PID)()["max_logit_diff"] < 1e-4
    with hf_genfix.disabled(PID), pytest.raises(DefectObserved):
        probe(PID)()


@pytest.mark.parametrize("padded", [False, True], ids=["one-row", "left-padded"])
def test_cached_generate_is_each_rows_no_cache_forward(require_applied, decoder, padded):
    """Every step's logits of a cached greedy generate() (one row; three rows left-padded) against a no-cache forward
    of the row alone; with the patch switched off the same call is wrong (the test can fail)."""
    require_applied(PID)
    rows = ROWS if padded else ROWS[:1]
    width = max(map(len, rows))
    ids = torch.tensor([[0] * (width - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])

    def worst() -> float:
        with torch.no_grad():
            out = decoder.generate(ids, attention_mask=mask, max_new_tokens=5, do_sample=False, pad_token_id=0,
                                   use_cache=True, output_logits=True, return_dict_in_generate=True)
        diffs = []
        for b, row in enumerate(rows):
            sequence = row + out.sequences[b, width:].tolist()
            reference = reference_logits(decoder, sequence)
            diffs += [float((out.logits[t][b] - reference[len(row) - 1 + t]).abs().max())
                      for t in range(len(out.logits))]
        return max(diffs)

    assert worst() < 1e-4
    with hf_genfix.disabled(PID):
        assert worst() > 1e-2


@pytest.mark.parametrize("call", ["no-cache forward", "uncached generate", "encoder"])
def test_where_upstream_is_right_the_answer_is_upstreams(require_applied, decoder, call):
    require_applied(PID)
    ids = torch.tensor([[0, 0] + ROWS[1], ROWS[0][:7]])
    mask = (ids != 0).long()
    encoder = build("bert-generation", seed=0, is_decoder=False) if call == "encoder" else None

    def run():
        with torch.no_grad():
            if call == "no-cache forward":
                return [decoder(input_ids=ids, attention_mask=mask, use_cache=False).logits]
            if call == "encoder":
                return [encoder(input_ids=ids, attention_mask=mask).logits]
            return list(decoder.generate(ids, attention_mask=mask, max_new_tokens=4, do_sample=False, pad_token_id=0,
                                         use_cache=False, output_logits=True, return_dict_in_generate=True).logits)

    with hf_genfix.recording() as rec:
        mine = run()
    with hf_genfix.disabled(PID):
        theirs = run()
    assert all(torch.equal(a, b) for a, b in zip(mine, theirs))
    assert not [line for line in rec.lines if line.startswith(PID)]


class TestPatch(PatchTests):
    """``model-bert-generation-cached-mask``: its probe proves it on this release; its plain program installs it."""
