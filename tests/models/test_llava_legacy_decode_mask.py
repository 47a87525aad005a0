"""model-llava-legacy-decode-mask / -llava-next- / -vipllava-: the cached decoding steps of LLaVA, LLaVA-NeXT and
VipLLaVA keep the attention mask generate() gives them, on the installed release.

Oracle: the sweep's image-loud-cached-padded scenario (each row against the no-cache forward of that row alone with
its image: the probes). Where upstream is right -- an unpadded batch, a prompt whose image is expanded inside the
model (legacy: the cache is longer than the mask) -- the output must be upstream's, bitwise.
"""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402

import hf_genfix  # noqa: E402
from hf_genfix.catalog import probe  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402

MODELS = {"model-llava-legacy-decode-mask": "llava", "model-llava-next-legacy-decode-mask": "llava_next",
          "model-vipllava-legacy-decode-mask": "vipllava"}


@pytest.fixture(scope="module", params=sorted(MODELS))
def patched(request, require_applied):
    """(patch id, the sweep's tiny model of its type), where the patch applies."""
    from hf_genfix.oracles.sweep import imagetext  # noqa: F401 - registers LLaVA-NeXT's builder
    from hf_genfix.oracles.sweep.families import ImageTextSubject

    require_applied(request.param)
    try:
        return request.param, ImageTextSubject(MODELS[request.param])
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def test_a_padded_batch_is_each_row_alone(patched):
    pid, _ = patched
    assert probe(pid)()["max_logit_diff"] < 1e-4
    with hf_genfix.disabled(pid), pytest.raises(DefectObserved):
        probe(pid)()


def _both(pid, call):
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        mine = call()
        with hf_genfix.disabled(pid):
            theirs = call()
    return mine, theirs


def test_an_unpadded_batch_is_upstreams(patched):
    pid, subject = patched
    rows = subject.prompts(5, 5, seed=3)
    images = [subject.image(1), subject.image(2)]

    def call():
        out = subject.model.generate(**subject.batch(rows, images), max_new_tokens=4, do_sample=False, pad_token_id=0,
                                     return_dict_in_generate=True, output_logits=True)
        return out.sequences, out.logits

    (seq, logits), (seq0, logits0) = _both(pid, call)
    assert torch.equal(seq, seq0)
    assert all(torch.equal(a, b) for a, b in zip(logits, logits0))


def test_a_legacy_prompt_is_left_to_upstream(patched):
    """One image token per prompt (the image expanded inside the model): the cache is longer than the mask, so the
    decoding steps need upstream's legacy path; the patch must not touch them."""
    pid, subject = patched
    model = subject.model
    ids = torch.tensor([[5, model.config.image_token_index, 9, 17, 33]])
    pixels = subject.image(1)
    call = lambda: model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **pixels, max_new_tokens=3,  # noqa: E731
                                  do_sample=False, pad_token_id=0, return_dict_in_generate=True, output_logits=True)
    try:
        (mine, theirs) = _both(pid, call)
    except Exception as exc:  # noqa: BLE001 - a release without the legacy path refuses the prompt itself
        pytest.skip(f"this release does not expand a single image token: {type(exc).__name__}")
    assert torch.equal(mine.sequences, theirs.sequences)
    assert all(torch.equal(a, b) for a, b in zip(mine.logits, theirs.logits))
