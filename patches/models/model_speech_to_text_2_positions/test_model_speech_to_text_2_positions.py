"""model-speech-to-text-2-positions: a left-padded Speech2Text2 batch generates what each row gives alone (4.46-4.50).

Speech2Text2 offsets its fairseq-style positions by the cache length, pads included, so every generated token of
a left-padded row is placed too far. With the patch: left-padded batches match the no-cache reference of each
unpadded row at every step, and an unpadded batch is upstream's bitwise. Without it (``hf_genfix.disabled``) the
first generated token is already off. Outside the range the tests are skipped.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import (DefectObserved, ProbeSkipped, check_rows_against_reference,  # noqa: E402
                               generate_steps, left_pad, tiny_model)
from hf_genfix.oracles.sliding import prompts  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PATCH = "model-speech-to-text-2-positions"


@pytest.fixture(scope="module")
def model(require_applied):
    require_applied(PATCH)
    try:
        return tiny_model("speech_to_text_2")
    except (ProbeSkipped, AttributeError) as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("lengths", [(7, 4), (3, 9, 6)])
def test_left_padded_rows_match_each_row_alone(model, lengths):
    pad = model.config.pad_token_id
    rows = prompts(*lengths, seed=len(lengths))
    ids, mask = left_pad(rows, pad_id=pad)
    run = generate_steps(model, ids, mask, max_new_tokens=6, pad_token_id=pad, eos_token_id=None)
    figures = check_rows_against_reference(model, rows, run, f"speech_to_text_2 {lengths}", eos_token_id=[])
    assert figures["steps_compared"] == 6 * len(rows)
    with hf_genfix.disabled(PATCH):
        upstream = generate_steps(model, ids, mask, max_new_tokens=6, pad_token_id=pad, eos_token_id=None)
    with pytest.raises(DefectObserved):  # the test can fail: upstream counts the pads
        check_rows_against_reference(model, rows, upstream, "speech_to_text_2, patch off", eos_token_id=[])


def test_an_unpadded_batch_is_upstream_s_bitwise(model):
    import torch

    rows = prompts(6, 6, seed=5)
    ids, mask = left_pad(rows, pad_id=model.config.pad_token_id)
    kwargs = dict(max_new_tokens=4, pad_token_id=model.config.pad_token_id, eos_token_id=None)
    run = generate_steps(model, ids, mask, **kwargs)
    with hf_genfix.disabled(PATCH):
        upstream = generate_steps(model, ids, mask, **kwargs)
    assert torch.equal(run.sequences, upstream.sequences)
    assert all(torch.equal(a, b) for a, b in zip(run.step_logits, upstream.step_logits))


class TestPatch(PatchTests):
    """``model-speech-to-text-2-positions``: its probe proves it on this release; its plain program gets it installed."""
