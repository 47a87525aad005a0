"""decoding-processor-padding on the installed release: processors that read the prompt see each row without its
left padding.

Oracle: each row generated alone with the same option (``oracles.sweep.processors.check_rows``: the same processed
scores at every step, the same tokens, the same stop). Where upstream is right -- no padding, processors that read
no ids, a processor the caller passed, a mask that is not a left padding, rows that finished -- the output must be
upstream's, bitwise, and the patch must say it changed nothing.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved, tiny_model  # noqa: E402
from hf_genfix.oracles.sweep.processors import LENGTHS, _batch, _generate, check_rows, rows_of  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PID = "decoding-processor-padding"


@pytest.fixture(autouse=True)
def patches_decided():
    from hf_genfix.doctor import import_targets

    import_targets()


@pytest.fixture(scope="module")
def model():
    return tiny_model("llama")


ROWS = rows_of(LENGTHS, vocab=128, seed=11)


def _applied() -> bool:
    return next(s for s in hf_genfix.status() if s.id == PID).state in ("applied", "forced")


def _watermark() -> dict:
    from transformers.generation import WatermarkingConfig

    return {"watermarking_config": WatermarkingConfig(bias=2.5, context_width=4, seeding_scheme="selfhash")}


def _repetition_fixed_upstream() -> bool:
    """5.23.0 gives the repetition penalty the padding lengths itself."""
    import transformers
    from packaging.version import Version

    return Version(Version(transformers.__version__).base_version) >= Version("5.23.0")


OPTIONS = {
    "no_repeat_ngram_size=1": lambda: {"no_repeat_ngram_size": 1},
    "encoder_repetition_penalty": lambda: {"encoder_repetition_penalty": 1.8},
    "repetition_penalty": lambda: {"repetition_penalty": 1.8},
    "watermark": _watermark,
}
# (option, layout) pairs where upstream's batch differs from the rows alone (pad 0 is not a token the rows pick, so
# the n = 1 ban of the pad shows in the scores only; with pad == eos the ban of eos does too).
DEFECTS = [("no_repeat_ngram_size=1", "left"), ("no_repeat_ngram_size=1", "pad-eos"),
           ("encoder_repetition_penalty", "left"), ("encoder_repetition_penalty", "pad-eos"),
           ("repetition_penalty", "left"), ("repetition_penalty", "pad-eos"), ("watermark", "pad-eos")]


@pytest.mark.parametrize("option, layout", DEFECTS)
def test_padded_rows_get_what_they_get_alone(model, option, layout):
    assert _applied(), f"{PID} is not installed on this release"
    with hf_genfix.recording() as rec:
        figures = check_rows(model, ROWS, layout, option, **OPTIONS[option]())
    assert figures["steps_compared"] >= 3 * 3
    if option == "repetition_penalty" and _repetition_fixed_upstream():
        return  # upstream's own padding lengths: the patch leaves the processor alone (next test)
    assert any(line.startswith(PID) for line in rec.lines), rec.lines
    with hf_genfix.disabled(PID), pytest.raises(DefectObserved):
        check_rows(model, ROWS, layout, option, **OPTIONS[option]())


def _outputs(model, layout="left", rows=ROWS, **options):
    import torch

    ids, mask, special = _batch(rows, layout)
    out = _generate(model, ids, mask, output_logits=True, **dict(special, **options))
    return [out.sequences] + list(out.scores) + list(out.logits), torch


def _same_as_upstream(model, layout="left", rows=ROWS, **options):
    """The outputs with and without the patch, bitwise; and the patch recorded no change."""
    assert _applied(), f"{PID} is not installed on this release"
    with hf_genfix.disabled(PID):
        upstream, torch = _outputs(model, layout, rows, **options)
    with hf_genfix.recording() as rec:
        ours, _ = _outputs(model, layout, rows, **options)
    assert rec.counts.get(PID, (0, 0))[0] >= 1, "the patch did not see the call"
    return all(torch.equal(a, b) for a, b in zip(upstream, ours)) and len(upstream) == len(ours), rec


@pytest.mark.parametrize("options", [
    {"suppress_tokens": [5, 7], "min_new_tokens": 3, "exponential_decay_length_penalty": (2, 1.5)},
    {"min_length": 9, "forced_eos_token_id": 1, "begin_suppress_tokens": [5]},
    {"no_repeat_ngram_size": 2},  # bans only (pad, x) n-grams: nothing a row that is still open can pick
], ids=["length-options", "min-length-forced-eos", "ngram-2"])
def test_processors_that_change_nothing_stay_bitwise(model, options):
    same, _ = _same_as_upstream(model, "pad-eos", **options)
    assert same


def test_unpadded_batch_is_left_alone(model):
    rows = rows_of((6, 6, 6), vocab=128, seed=3)
    same, rec = _same_as_upstream(model, "left", rows, no_repeat_ngram_size=1, encoder_repetition_penalty=1.8,
                                  repetition_penalty=1.3)
    assert same and not [line for line in rec.lines if line.startswith(PID)]


def test_finished_rows_keep_upstreams_scores(model):
    """A row that emitted eos gets pads appended; its (ignored) scores stay upstream's, bitwise."""
    import torch

    ids, mask, special = _batch(ROWS, "pad-eos")
    first = _generate(model, ids, mask, no_repeat_ngram_size=1, **special)
    end = int(first.sequences[0, ids.shape[1] + 1])  # row 0's second token: as an eos, row 0 stops there
    options = dict(special, no_repeat_ngram_size=1, eos_token_id=[1, end])
    with hf_genfix.disabled(PID):
        upstream = _generate(model, ids, mask, **options)
    ours = _generate(model, ids, mask, **options)
    finished = [b for b in range(len(ROWS)) if end in ours.sequences[b, ids.shape[1]:-1].tolist()]
    assert finished, "no row finished early: the test sees nothing"
    for b in finished:
        stop = ours.sequences[b, ids.shape[1]:].tolist().index(end)
        for t in range(stop + 1, len(ours.scores)):
            assert torch.equal(ours.scores[t][b], upstream.scores[t][b])


def test_a_processor_the_caller_passes_is_theirs(model):
    from transformers import LogitsProcessorList, NoRepeatNGramLogitsProcessor

    same, rec = _same_as_upstream(model, "pad-eos",
                                  logits_processor=LogitsProcessorList([NoRepeatNGramLogitsProcessor(1)]))
    assert same and not [line for line in rec.lines if line.startswith(PID)]


def test_a_mask_that_is_not_left_padding_defers_to_upstream(model):
    with hf_genfix.disabled("right-padding"):
        same, rec = _same_as_upstream(model, "right", no_repeat_ngram_size=1, encoder_repetition_penalty=1.8)
    assert same and not [line for line in rec.lines if line.startswith(PID)]


def test_beams_and_returned_sequences_get_each_row_alone(model):
    from hf_genfix.oracles.sweep.processors import check_beams

    assert _applied()
    options = dict(num_beams=3, num_return_sequences=2, early_stopping=True, no_repeat_ngram_size=1,
                   encoder_repetition_penalty=1.8)
    check_beams(model, ROWS, "pad-eos", "beams", **options)
    with hf_genfix.disabled(PID), pytest.raises(DefectObserved):
        check_beams(model, ROWS, "pad-eos", "beams", **options)


class TestPatch(PatchTests):
    """``decoding-processor-padding``: its probe proves it on this release; its plain program gets it installed."""
