"""``model-qwen2-vl-continuation-deltas``: the checks every patch owes (hf_genfix.testing.patches.PatchTests), and
where upstream is right the answer is upstream's."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402

import hf_genfix  # noqa: E402
from hf_genfix.oracles import ProbeSkipped  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PID = "model-qwen2-vl-continuation-deltas"


@pytest.fixture(scope="module")
def subject(require_applied):
    from hf_genfix.oracles.sweep import imagetext  # noqa: F401 - registers the image-text scenarios
    from hf_genfix.oracles.sweep.families import ImageTextSubject

    require_applied(PID)
    try:
        return ImageTextSubject("qwen2_vl")
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def test_one_generate_call_is_upstreams(subject):
    """A padded batch's first turn (offsets carried from step to step by generate() itself): bitwise upstream's, and
    the patch says it changed nothing."""
    rows = subject.prompts(5, 2, seed=3)
    images = [subject.image(1), subject.image(2)]

    def call():
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            out = subject.model.generate(**subject.batch(rows, images), max_new_tokens=4, do_sample=False,
                                         pad_token_id=0, return_dict_in_generate=True, output_logits=True)
        return out.sequences, out.logits

    with hf_genfix.recording() as rec:
        seq, logits = call()
    with hf_genfix.disabled(PID):
        seq0, logits0 = call()
    assert torch.equal(seq, seq0) and all(torch.equal(a, b) for a, b in zip(logits, logits0))
    assert not [line for line in rec.lines if line.startswith(PID)]


class TestPatch(PatchTests):
    """``model-qwen2-vl-continuation-deltas``: its probe proves it on this release; its plain program installs it."""
