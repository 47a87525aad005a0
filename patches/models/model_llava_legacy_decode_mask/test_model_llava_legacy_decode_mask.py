"""model-llava-legacy-decode-mask on the installed release: LLaVA's cached decoding steps keep the attention mask
generate() gives them.

Oracle: the sweep's image-loud-cached-padded scenario (each row against the no-cache forward of that row alone with
its image: the probe). Where upstream is right -- an unpadded batch, a prompt whose image is expanded inside the
model (legacy: the cache is longer than the mask) -- the output must be upstream's, bitwise.
"""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402

import hf_genfix  # noqa: E402
from hf_genfix import catalog  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

probe = catalog.probe_module("model-llava-legacy-decode-mask").probe

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PID = "model-llava-legacy-decode-mask"


@pytest.fixture(autouse=True)
def patches_decided():
    from hf_genfix.doctor import import_targets

    import_targets()


def _state() -> str:
    return next(s for s in hf_genfix.status() if s.id == PID).state


@pytest.fixture(scope="module")
def subject():
    from hf_genfix.oracles.sweep.families import ImageTextSubject

    try:
        return ImageTextSubject("llava")
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def test_probe_passes_with_and_fails_without():
    if _state() not in ("applied", "forced"):
        pytest.skip(f"{PID} is not installed on this release ({_state()})")
    probe()
    with hf_genfix.disabled(PID), pytest.raises(DefectObserved):
        probe()


def _both(call):
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        mine = call()
        with hf_genfix.disabled(PID):
            theirs = call()
    return mine, theirs


def _generate(subject, rows, images):
    kwargs = subject.batch(rows, images)
    out = subject.model.generate(**kwargs, max_new_tokens=4, do_sample=False, pad_token_id=0,
                                 return_dict_in_generate=True, output_logits=True)
    return out.sequences, out.logits


def test_unpadded_batch_bitwise(subject):
    rows = subject.prompts(5, 5, seed=3)
    images = [subject.image(1), subject.image(2)]
    (seq, logits), (seq0, logits0) = _both(lambda: _generate(subject, rows, images))
    assert torch.equal(seq, seq0)
    assert all(torch.equal(a, b) for a, b in zip(logits, logits0))


def test_legacy_prompt_left_to_upstream(subject):
    """One image token per prompt (the image expanded inside the model): the cache is longer than the mask, so the
    decoding steps need upstream's legacy path; the patch must not touch them."""
    model = subject.model
    image_token = model.config.image_token_index
    if subject.spec.image_tokens <= 1:
        pytest.skip("the tiny LLaVA has a single image token")
    ids = torch.tensor([[5, image_token, 9, 17, 33]])
    pixels = subject.image(1)
    call = lambda: model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **pixels, max_new_tokens=3,  # noqa: E731
                                  do_sample=False, pad_token_id=0, return_dict_in_generate=True, output_logits=True)
    try:
        (mine, theirs) = _both(call)
    except Exception as exc:  # noqa: BLE001 - a release without the legacy path refuses the prompt itself
        pytest.skip(f"this release does not expand a single image token: {type(exc).__name__}")
    assert torch.equal(mine.sequences, theirs.sequences)
    assert all(torch.equal(a, b) for a, b in zip(mine.logits, theirs.logits))


class TestPatch(PatchTests):
    """``model-llava-legacy-decode-mask``: its probe proves it on this release; its plain program gets it installed."""
