"""right-padding: a right-padded batch through generate() gives every row what that row gives alone.

Oracles: each row's per-step logits and greedy tokens against one no-cache forward of the unpadded row
(oracles.generation), and, where a step-by-step oracle does not apply (sampling, beam search, streamers), the
same rows left-padded by the caller. Every scenario also runs with the patch switched off where the release is
affected, so that a test that cannot fail would show.
"""

from __future__ import annotations

import logging

import pytest
import torch

import hf_genfix
from padding_models import model_of, patches_decided  # noqa: F401 (autouse fixture)
from hf_genfix import catalog
from hf_genfix.oracles import DefectObserved, check_rows_against_reference, generate_steps, reference_logits
from hf_genfix.oracles.generation import left_pad, right_pad
from hf_genfix.oracles.padding import check_right_padded_generate, ragged_rows, check_same_as_left_padded

right_padding = catalog.fix("right-padding")

ARCHS = ["llama", "gpt2", "gpt_neo", "mistral", "qwen2", "gemma"]
PAD, EOS = 0, 2  # oracles.tiny


def _lengths(batch: int, seed: int) -> list[int]:
    """Ragged prompt lengths; row 0 is the longest, so one row has no padding."""
    import random

    rng = random.Random(seed)
    lengths = [rng.randint(1, 8) for _ in range(batch)]
    lengths[0] = max(lengths) + 1
    return lengths


def _installed() -> bool:
    return next(s for s in hf_genfix.status() if s.id == "right-padding").state in ("applied", "forced")


@pytest.mark.parametrize("arch", ARCHS)
def test_every_batch_size_matches_each_row_alone(arch):
    model = model_of(arch)
    sizes = range(1, 9) if arch == "llama" else (2, 5, 8)
    for batch in sizes:
        rows = ragged_rows(_lengths(batch, seed=batch), seed=batch)
        figures = check_right_padded_generate(model, rows, pad_id=PAD, max_new_tokens=4,
                                              what=f"{arch} batch {batch}")
        assert figures["steps_compared"] >= batch  # rows that generate eos stop early


@pytest.mark.parametrize("arch", ARCHS)
def test_without_the_patch_the_batch_is_wrong(arch):
    # The defect the patch exists for, on this release (all releases measured are affected).
    assert _installed()
    model = model_of(arch)
    rows = ragged_rows([7, 2, 4], seed=1)
    with hf_genfix.disabled("right-padding"):
        with pytest.raises(DefectObserved):
            check_right_padded_generate(model, rows, pad_id=PAD, max_new_tokens=4)


def test_single_row_with_trailing_padding():
    model = model_of("llama")
    row = ragged_rows([5], seed=3)[0]
    ids = torch.tensor([row + [PAD] * 3])
    mask = torch.tensor([[1] * 5 + [0] * 3])
    run = generate_steps(model, ids, attention_mask=mask, max_new_tokens=4, pad_token_id=PAD)
    check_rows_against_reference(model, [row], run, "one right-padded row")


def test_a_row_that_stops_at_once_is_all_prompt():
    """eos is the first greedy token of row 1: that row's output is its prompt, then eos, then padding."""
    model = model_of("llama")
    rows = ragged_rows([6, 3, 5], seed=4)
    first = int(reference_logits(model, rows[1])[-1].argmax())
    ids, mask = right_pad(rows, PAD)
    run = generate_steps(model, ids, attention_mask=mask, max_new_tokens=4, pad_token_id=PAD, eos_token_id=first)
    check_rows_against_reference(model, rows, run, "early stop", eos_token_id=first)
    assert run.new_tokens(1)[0] == first
    assert all(t == PAD for t in run.new_tokens(1)[1:])


def assert_unchanged_by_the_patch(model, ids, **kwargs):
    kwargs = dict(dict(max_new_tokens=3, do_sample=False), **kwargs)
    with torch.no_grad():
        patched = model.generate(ids, **kwargs)
        with hf_genfix.disabled("right-padding"):
            plain = model.generate(ids, **kwargs)
    assert torch.equal(patched, plain)


def test_batch_without_any_padding_is_left_alone():
    model = model_of("llama")
    ids, mask = left_pad(ragged_rows([4, 4, 4], seed=5), PAD)
    assert_unchanged_by_the_patch(model, ids, attention_mask=mask, pad_token_id=PAD)


def test_left_padded_batch_is_left_alone():
    model = model_of("llama")
    ids, mask = left_pad(ragged_rows([6, 2, 4], seed=5), PAD)
    assert_unchanged_by_the_patch(model, ids, attention_mask=mask, pad_token_id=PAD)


def test_prompt_part_of_the_output_is_left_aligned():
    model = model_of("llama")
    rows = ragged_rows([5, 2], seed=6)
    ids, mask = right_pad(rows, PAD)
    with torch.no_grad():
        out = model.generate(ids, attention_mask=mask, max_new_tokens=3, do_sample=False, pad_token_id=PAD)
    left_ids, _ = left_pad(rows, PAD)
    assert torch.equal(out[:, : ids.shape[1]], left_ids)


def test_no_mask_pad_differs_from_eos():
    model = model_of("llama")
    rows = ragged_rows([6, 3, 4], seed=7)
    figures = check_right_padded_generate(model, rows, pad_id=PAD, attention_mask=None, eos_token_id=EOS)
    assert figures["rows"] == 3


def test_no_mask_pad_equals_eos_is_not_guessed():
    """With pad == eos a trailing eos may be the prompt's own: the call goes through unchanged."""
    ids, _ = right_pad(ragged_rows([6, 3], seed=8), EOS)
    assert_unchanged_by_the_patch(model_of("llama"), ids, pad_token_id=EOS, eos_token_id=EOS)


def test_mask_with_holes_is_not_padding():
    ids = torch.tensor(ragged_rows([6, 6], seed=9))
    mask = torch.tensor([[1, 1, 0, 1, 1, 0], [1, 1, 1, 1, 1, 1]])
    assert_unchanged_by_the_patch(model_of("llama"), ids, attention_mask=mask, pad_token_id=PAD)


@pytest.mark.parametrize("arch", ["llama", "gpt2", "qwen2"])
def test_sampling_same_seed_same_as_left_padded(arch):
    model = model_of(arch)
    rows = ragged_rows([7, 2, 5, 4], seed=11)
    check_same_as_left_padded(model, rows, pad_id=PAD, seed=1234, do_sample=True, max_new_tokens=6,
                        return_dict_in_generate=True, output_scores=True)


@pytest.mark.parametrize("arch", ["llama", "gpt_neo"])
def test_beam_search_same_as_left_padded(arch):
    model = model_of(arch)
    rows = ragged_rows([6, 2, 4], seed=12)
    check_same_as_left_padded(model, rows, pad_id=PAD, num_beams=3, num_return_sequences=2, do_sample=False,
                        max_new_tokens=5, return_dict_in_generate=True, output_scores=True)


def test_beam_search_without_the_patch_differs():
    model = model_of("llama")
    rows = ragged_rows([6, 2, 4], seed=12)
    with hf_genfix.disabled("right-padding"):
        with pytest.raises(DefectObserved):
            check_same_as_left_padded(model, rows, pad_id=PAD, num_beams=3, do_sample=False, max_new_tokens=5,
                                return_dict_in_generate=True, output_scores=True)


def test_return_dict_in_generate_keeps_its_fields():
    model = model_of("llama")
    rows = ragged_rows([5, 3], seed=13)
    ids, mask = right_pad(rows, PAD)
    with torch.no_grad():
        out = model.generate(ids, attention_mask=mask, max_new_tokens=3, do_sample=False, pad_token_id=PAD,
                             return_dict_in_generate=True, output_scores=True, output_hidden_states=True)
    assert out.sequences.shape == (2, ids.shape[1] + 3)
    assert len(out.scores) == 3 and out.scores[0].shape[0] == 2
    assert out.hidden_states is not None


class _Recorder:
    """A streamer (BaseStreamer's interface) that keeps what generate() streamed."""

    def __init__(self):
        self.chunks, self.ended = [], False

    def put(self, value):
        self.chunks.append(value.detach().clone().reshape(value.shape[0], -1) if value.dim() else value)

    def end(self):
        self.ended = True


def test_streamer_sees_the_rows_new_tokens():
    model = model_of("llama")
    rows = ragged_rows([6, 2, 4], seed=14)
    ids, mask = right_pad(rows, PAD)
    recorder = _Recorder()
    with torch.no_grad():
        out = model.generate(ids, attention_mask=mask, max_new_tokens=4, do_sample=False, pad_token_id=PAD,
                             streamer=recorder)
    assert recorder.ended
    streamed = torch.cat([c.reshape(len(rows), -1) for c in recorder.chunks[1:]], dim=1)
    assert torch.equal(streamed, out[:, ids.shape[1]:])
    left_ids, left_mask = left_pad(rows, PAD)
    with torch.no_grad():
        left = model.generate(left_ids, attention_mask=left_mask, max_new_tokens=4, do_sample=False,
                              pad_token_id=PAD)
    assert torch.equal(streamed, left[:, ids.shape[1]:])


@pytest.mark.parametrize("arch", ["llama", "gpt2", "gemma"])
def test_inputs_embeds_with_a_right_padded_mask(arch):
    model = model_of(arch)
    rows = ragged_rows([6, 3, 5], seed=15)
    ids, mask = right_pad(rows, PAD)
    with torch.no_grad():
        embeds = model.get_input_embeddings()(ids)
    before = embeds.clone()
    run = generate_steps(model, None, attention_mask=mask, inputs_embeds=embeds, max_new_tokens=4,
                         pad_token_id=PAD)
    check_rows_against_reference(model, rows, run, f"{arch} inputs_embeds")
    assert torch.equal(embeds, before)


def test_caller_tensors_are_not_modified():
    model = model_of("llama")
    rows = ragged_rows([6, 2, 4], seed=16)
    ids, mask = right_pad(rows, PAD)
    saved = [t.clone() for t in (ids, mask)]
    with torch.no_grad():
        model.generate(ids, attention_mask=mask, max_new_tokens=3, do_sample=False, pad_token_id=PAD)
        model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=3, do_sample=False, pad_token_id=PAD)
        model.generate(ids, max_new_tokens=3, do_sample=False, pad_token_id=PAD)  # mask built from pad ids
    for t, s in zip((ids, mask), saved):
        assert torch.equal(t, s)


def test_keyword_input_ids_are_realigned_too():
    model = model_of("llama")
    rows = ragged_rows([5, 2], seed=17)
    ids, mask = right_pad(rows, PAD)
    with torch.no_grad():
        by_keyword = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=3, do_sample=False,
                                    pad_token_id=PAD)
        positional = model.generate(ids, attention_mask=mask, max_new_tokens=3, do_sample=False,
                                    pad_token_id=PAD)
    assert torch.equal(by_keyword, positional)


# -- the realignment itself, on a stand-in for generate() -----------------------------------------------------
class _Model:
    class config:
        is_encoder_decoder = False

    generation_config = None


def _seen(args=(), **kwargs):
    calls = []
    right_padding._generate(lambda *a, **k: calls.append((a, k)), _Model(), args, kwargs)
    return calls[0]


def test_every_per_token_input_moves_with_its_row():
    ids = torch.tensor([[5, 6, 7], [8, 9, 0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    token_type_ids = torch.tensor([[1, 1, 1], [2, 3, 0]])
    pixel_values = torch.zeros(2, 3, 4, 4)  # (batch, channels, ...): its second dim is not the sequence
    args, kwargs = _seen((ids,), attention_mask=mask, token_type_ids=token_type_ids, pixel_values=pixel_values)
    assert args[0].tolist() == [[5, 6, 7], [0, 8, 9]]
    assert kwargs["attention_mask"].tolist() == [[1, 1, 1], [0, 1, 1]]
    assert kwargs["token_type_ids"].tolist() == [[1, 1, 1], [0, 2, 3]]
    assert kwargs["pixel_values"] is pixel_values
    assert ids.tolist() == [[5, 6, 7], [8, 9, 0]] and mask.tolist() == [[1, 1, 1], [1, 1, 0]]


def test_a_callers_cache_or_an_encoder_decoder_is_left_alone():
    ids = torch.tensor([[5, 6, 7], [8, 9, 0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    args, kwargs = _seen((ids,), attention_mask=mask, past_key_values=object())
    assert args[0] is ids and kwargs["attention_mask"] is mask

    class Seq2Seq(_Model):
        class config:
            is_encoder_decoder = True

    calls = []
    right_padding._generate(lambda *a, **k: calls.append((a, k)), Seq2Seq(), (ids,), {"attention_mask": mask})
    assert calls[0][0][0] is ids


def test_left_padded_prompt_ending_in_eos_raises_no_false_alarm():
    """<= 5.2 warns "right-padding was detected" when a left-padded prompt ends in eos and pad == eos."""
    import transformers
    from packaging.version import Version

    model = model_of("llama")
    rows = [ragged_rows([4], seed=18)[0] + [EOS], ragged_rows([2], seed=19)[0] + [EOS]]
    ids, mask = left_pad(rows, EOS)
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("transformers.generation.utils")
    previous = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_warning()
    logger.addHandler(handler)
    try:
        def alarms(**kwargs):
            records.clear()
            with torch.no_grad():
                model.generate(ids, attention_mask=mask, max_new_tokens=2, do_sample=False, pad_token_id=EOS,
                               eos_token_id=EOS)
            return [r for r in records if "right-padding was detected" in r.getMessage()]

        assert alarms() == []
        with hf_genfix.disabled("right-padding"):
            unpatched = alarms()
    finally:
        logger.removeHandler(handler)
        transformers.logging.set_verbosity(previous)
    # The evidence: only the last-token check of <= 5.2 raises it (5.3, PR 44021, reads the mask).
    assert bool(unpatched) == (Version(transformers.__version__) < Version("5.3.0"))
