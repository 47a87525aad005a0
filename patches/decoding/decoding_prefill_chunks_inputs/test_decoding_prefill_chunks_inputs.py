"""decoding-prefill-chunks-inputs (4.51-4.57): generate with prefill_chunk_size and an image or inputs_embeds in the
prompt gives what one pass gives.

Where the patch is applied: BLIP-2's left-padded image batch and Llama's left-padded ids-plus-embeddings batch
with ``prefill_chunk_size=3`` match the no-cache forward of each row (and do not with the patch off); embeddings
alone, which crash upstream's loop, give the one-pass answer. Where upstream chunks right (a text-only prompt, a
prompt within one chunk, mllama's image) the output is what the patch off gives, bitwise. Elsewhere the tests skip.
"""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles.sweep import SCENARIOS, Subject  # noqa: E402
from hf_genfix.oracles.sweep.families import ImageTextSubject  # noqa: E402
from hf_genfix.testing.patches import PatchTests, assert_image_upstream_bitwise  # noqa: E402

PID = "decoding-prefill-chunks-inputs"


@pytest.fixture(scope="module")
def applied():
    from hf_genfix.doctor import import_targets

    import_targets()
    if {s.id: s.state for s in hf_genfix.status()}[PID] != "applied":
        pytest.skip(f"{PID} is not applied on this release")
    return PID


def _subject(kind, model_type):
    try:
        return kind(model_type)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


CASES = {
    "blip-2 image": (ImageTextSubject, "blip-2", "image-prefill-chunks-padded"),
    "llama embeds": (Subject, "llama", "inputs-embeds-prefill-chunks"),
}


@pytest.fixture(params=sorted(CASES))
def case(request, applied):
    kind, model_type, scenario = CASES[request.param]
    return _subject(kind, model_type), SCENARIOS[scenario]


def _quiet(func, subject):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(subject)


def test_chunked_prefill_with_an_image_or_embeds_is_one_pass(case):
    subject, scenario = case
    assert _quiet(scenario, subject)["max_logit_diff"] <= 1e-4


def test_without_the_patch_the_chunks_lose_them(case, applied):
    subject, scenario = case
    with hf_genfix.disabled(applied), pytest.raises(DefectObserved, match="prefill_chunk_size") as caught:
        _quiet(scenario, subject)
    assert caught.value.figures["max_logit_diff"] > 0.1


def test_the_patch_says_so_once(applied):
    from hf_genfix import HFGenfixWarning
    from hf_genfix.toolkit import forget_warnings

    subject = _subject(Subject, "llama")
    forget_warnings(PID)
    with pytest.warns(HFGenfixWarning, match="one pass"):
        SCENARIOS["inputs-embeds-prefill-chunks"](subject)


def _generate(model, **options):
    import torch

    with torch.no_grad():
        out = model.generate(max_new_tokens=3, do_sample=False, output_logits=True, return_dict_in_generate=True,
                             pad_token_id=0, eos_token_id=None, **options)
    return out.sequences, torch.stack(out.logits)


def _both(model, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = _generate(model, **options)
        with hf_genfix.disabled(PID):
            upstream = _generate(model, **options)
    return ours, upstream


def test_embeddings_alone_get_the_one_pass_answer(applied):
    """Upstream's loop crashes on the empty ids of an embeddings-only prompt; with the patch it is one pass."""
    import torch

    model = _subject(Subject, "llama").model
    ids = torch.arange(3, 13)[None]
    embeds = model.get_input_embeddings()(ids).detach() * 1.5
    mask = torch.ones_like(ids)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chunked = _generate(model, inputs_embeds=embeds, attention_mask=mask, prefill_chunk_size=3)
        whole = _generate(model, inputs_embeds=embeds, attention_mask=mask)
    assert torch.equal(chunked[0], whole[0])
    assert torch.allclose(chunked[1], whole[1], atol=1e-5)


@pytest.mark.parametrize("chunk", [3, 64])
def test_a_text_prompt_or_one_chunk_is_bitwise_upstream(applied, chunk):
    import torch

    model = _subject(Subject, "llama").model
    ids = torch.arange(3, 13)[None]
    options = dict(attention_mask=torch.ones_like(ids), prefill_chunk_size=chunk)
    if chunk == 64:  # embeddings in one chunk: upstream's loop (no split to lose them in)
        options["inputs_embeds"] = model.get_input_embeddings()(ids).detach() * 1.5
    (ours, ours_logits), (theirs, theirs_logits) = _both(model, input_ids=ids, **options)
    assert torch.equal(ours, theirs) and torch.equal(ours_logits, theirs_logits)


def test_mllama_keeps_upstreams_chunks(applied):
    from hf_genfix.oracles.sweep import imagetext as imagetext

    subject = _subject(ImageTextSubject, "mllama")
    prompts, images = imagetext._rows(subject, (6, 3), seed=30)
    assert_image_upstream_bitwise(subject, PID, prompts, images, prefill_chunk_size=3)


class TestPatch(PatchTests):
    """``decoding-prefill-chunks-inputs``: its probe proves it on this release; its plain program gets it installed."""
