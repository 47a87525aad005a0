"""decoding-image-prefill-chunks (5.3-5.22) / decoding-image-prefill-chunks-bidirectional (5.23+): generate with
prefill_chunk_size and an image in the prompt gives what one pass gives.

Where a patch is applied: a left-padded batch of two image prompts with ``prefill_chunk_size=3``, loud weights,
every step against the no-cache forward of each row with its image (LLaVA and Gemma-3 on 5.3-5.22, Gemma-3 on 5.23+);
the same with the patch off is wrong; where upstream chunks right (a text-only prompt, a prompt within one chunk,
LLaVA on 5.23+, mllama on 5.3-5.22) the output is upstream's bitwise. Elsewhere the tests skip.
"""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles.sweep import imagetext as imagetext  # noqa: E402
from hf_genfix.oracles.sweep import SCENARIOS  # noqa: E402
from hf_genfix.oracles.sweep.families import ImageTextSubject  # noqa: E402
from hf_genfix.testing.patches import PatchTests, assert_image_upstream_bitwise  # noqa: E402

PIDS = ("decoding-image-prefill-chunks", "decoding-image-prefill-chunks-bidirectional")


@pytest.fixture(scope="module")
def applied():
    from hf_genfix.doctor import import_targets

    import_targets()
    states = {s.id: s.state for s in hf_genfix.status()}
    found = [pid for pid in PIDS if states[pid] == "applied"]
    if not found:
        pytest.skip("no image-prefill-chunks patch is applied on this release")
    return found[0]


def _subject(model_type):
    try:
        return ImageTextSubject(model_type)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def _wrong_types(applied):
    return ["gemma3"] if applied.endswith("bidirectional") else ["llava", "gemma3"]


@pytest.fixture(params=["llava", "gemma3"])
def wrong_upstream(request, applied):
    if request.param not in _wrong_types(applied):
        pytest.skip(f"{request.param} is chunked right by this release")
    return _subject(request.param)


def _chunked(subject):
    return _unless_refused(SCENARIOS["image-prefill-chunks-padded"], subject)


def _unless_refused(call, *args, **kwargs):
    """``call(*args)``; a skip where it raises ValueError and so does upstream (every patch off), the same words:
    5.0.0 refuses these chunked prefills ("Cannot use prefill chunking without a cache"), where the probe is n/a."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return call(*args, **kwargs)
        except ValueError as exc:
            with hf_genfix.disabled():
                try:
                    call(*args, **kwargs)
                except ValueError as upstream:
                    if str(upstream) == str(exc):
                        pytest.skip(f"this release refuses it, with or without hf_genfix: {exc}")
            raise


def test_chunked_prefill_of_an_image_prompt_is_one_pass(wrong_upstream):
    assert _chunked(wrong_upstream)["max_logit_diff"] <= 1e-4


def test_without_the_patch_the_chunks_lose_the_image(wrong_upstream, applied):
    with hf_genfix.disabled(applied), pytest.raises(DefectObserved, match="prefill_chunk_size") as caught:
        _chunked(wrong_upstream)
    assert caught.value.figures["max_logit_diff"] > 0.1


def test_the_patch_says_so_once(wrong_upstream, applied):
    from hf_genfix import HFGenfixWarning
    from hf_genfix.toolkit import forget_warnings

    forget_warnings(applied)
    with pytest.warns(HFGenfixWarning, match="one pass"):
        SCENARIOS["image-prefill-chunks-padded"](wrong_upstream)


def test_a_prompt_given_as_embeddings_is_one_pass(applied):
    """Every release embeds each chunk from its ids: the given embeddings are lost (a left-padded batch given as ids
    plus embeddings that are not the ids' own); one pass with the patch. Without it Llama is wrong on 5.0-5.22 and
    raises a shape error on 5.23+ (FLINT is silently wrong there)."""
    from hf_genfix.oracles.sweep import Subject

    subject = Subject("llama")
    assert _chunked_embeds(subject)["max_logit_diff"] <= 1e-4
    if applied.endswith("bidirectional"):
        with hf_genfix.disabled(), pytest.raises(RuntimeError, match="size"):
            _chunked_embeds(subject)
        return
    # Every patch off: with this one off alone, prepare-inputs' slicing makes the chunks raise a shape error instead
    with hf_genfix.disabled(), pytest.raises(DefectObserved, match="prefill_chunk_size") as caught:
        _chunked_embeds(subject)
    assert caught.value.figures["max_logit_diff"] > 0.1


def _chunked_embeds(subject):
    return _unless_refused(SCENARIOS["inputs-embeds-prefill-chunks"], subject)


@pytest.mark.parametrize("model_type", ["llava", "mllama"])
def test_where_upstream_chunks_right_it_is_bitwise_upstream(model_type, applied):
    """LLaVA on 5.23+ (its images are pre-encoded per chunk), mllama on 5.3-5.22 (cross-attention): untouched."""
    if model_type == "llava" and not applied.endswith("bidirectional"):
        pytest.skip("5.3-5.22 chunk LLaVA wrongly")
    if model_type == "mllama" and applied.endswith("bidirectional"):
        pytest.skip("5.23+ refuses mllama's raw pixels in chunks (upstream's error, untouched)")
    if model_type == "mllama" and _version() < (5, 3):
        pytest.skip("5.0-5.2 raise on mllama's chunked image prefill (IndexError of the cross-attention mask: "
                    "upstream's error, untouched)")
    subject = _subject(model_type)
    prompts, images = imagetext._rows(subject, (6, 3), seed=30)
    assert_image_upstream_bitwise(subject, applied, prompts, images, prefill_chunk_size=3)


def test_a_prompt_within_one_chunk_is_bitwise_upstream(applied):
    subject = _subject("gemma3")
    prompts, images = imagetext._rows(subject, (6, 3), seed=30)
    _unless_refused(assert_image_upstream_bitwise, subject, applied, prompts, images, prefill_chunk_size=64)


def _version() -> tuple[int, int]:
    import transformers

    return tuple(int(p) for p in transformers.__version__.split(".")[:2])  # type: ignore[return-value]


class TestPatch(PatchTests):
    """``decoding-image-prefill-chunks``: its probe proves it on this release; its plain program gets it installed."""
