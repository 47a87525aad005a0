"""check_generation on correct tiny models (every check that runs passes) and on deliberately broken ones (the
check that should catch the defect fails, at the right step, and its message names the defect)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from genfix_broken_models import ArangePositionsGPT2, MaskFromInputsLlama, UntrimmedLlama, build  # noqa: E402

from hf_genfix.oracles import tiny_model  # noqa: E402
from hf_genfix.testing import CHECKS, GenerationCheckFailed, check_generation  # noqa: E402


@pytest.mark.parametrize("model_type", ["llama", "gpt2"])
def test_correct_model_passes_every_check_that_runs(model_type):
    report = check_generation(tiny_model(model_type))
    assert report.ok, str(report)
    assert [c.name for c in report] == list(CHECKS)
    for name in ("cache", "left-padding"):
        assert report[name].passed, str(report)
        assert report[name].figures["steps_compared"] > 0
        assert report[name].max_logit_diff <= 1e-4
    assert report["assisted"].outcome == "skipped"  # not asked for
    assert report.raise_for_failures() is report
    assert bool(report) and "PASSED   cache" in str(report)


def test_untrimmed_inputs_are_named():
    report = check_generation(build(UntrimmedLlama, "llama"), checks=["cache"])
    cache = report["cache"]
    assert cache.failed, str(report)
    # The prompt pass is right; the first decode step after it is the first wrong one.
    assert cache.step == 1
    assert "input ids not trimmed" in cache.message
    assert "prompt 0" in cache.message
    if "exception" not in cache.figures:  # some releases crash on the doubled cache instead of drifting
        assert cache.max_logit_diff > 1e-4
        assert "Step 0 (the token right after the prompt) matches" in cache.message


def test_mask_that_does_not_grow_is_named():
    report = check_generation(build(MaskFromInputsLlama, "llama"), checks=["cache", "left-padding"])
    padded = report["left-padding"]
    assert padded.failed, str(report)
    assert padded.step == 1
    assert "attention mask does not follow the cache" in padded.message
    assert "1 column for" in padded.message


def test_arange_positions_under_left_padding_are_named():
    report = check_generation(build(ArangePositionsGPT2, "gpt2"), checks=["cache", "left-padding"])
    assert report["cache"].passed, str(report)  # unpadded rows are fine: only padding shows it
    padded = report["left-padding"]
    assert padded.failed
    assert padded.step == 0
    assert "counted from the first column (arange)" in padded.message
    assert "Each prompt alone generates correctly" in padded.message
    assert padded.figures["row"] in (0, 1)  # a row that has padding


def test_failure_raises_assertion_with_the_report_text():
    report = check_generation(build(ArangePositionsGPT2, "gpt2"), checks=["left-padding"])
    assert not report
    with pytest.raises(AssertionError) as caught:
        report.raise_for_failures()
    assert isinstance(caught.value, GenerationCheckFailed)
    assert str(caught.value) == str(report)
    assert "FAILED   left-padding" in str(caught.value)


def test_user_prompts_lengths_and_tokenizer():
    from hf_genfix.oracles.tokenizers import load_tokenizer, special_ids

    tokenizer = load_tokenizer("gpt2")
    model = tiny_model("gpt2", **special_ids("gpt2"))
    report = check_generation(model, tokenizer, prompts=["the quick brown fox", "hello world"], max_new_tokens=3,
                              checks=["cache", "left-padding"])
    assert report.ok, str(report)
    rows = [len(tokenizer(p)["input_ids"]) for p in ["the quick brown fox", "hello world"]]
    # With cache and without, every step of each prompt is compared (fewer if eos comes first).
    assert 0 < report["cache"].figures["steps_compared"] <= 2 * 2 * 3
    assert report["left-padding"].figures["steps_compared"] <= 2 * len(rows) * 3
    with pytest.raises(ValueError, match="need a tokenizer"):
        check_generation(model, prompts=["text without tokenizer"])


def test_token_id_prompts_and_a_single_prompt_still_pad():
    report = check_generation(tiny_model("llama"), prompts=[[5, 6, 7, 8, 9]], checks=["left-padding"])
    assert report["left-padding"].passed, str(report)
    # The single prompt was joined by a shorter copy so that one row is padded.
    assert report["left-padding"].figures["steps_compared"] > 8


def test_unknown_check_and_bad_patches_value():
    model = tiny_model("llama")
    with pytest.raises(ValueError, match="unknown check"):
        check_generation(model, checks=["cached"])
    with pytest.raises(ValueError, match="patches"):
        check_generation(model, patches="maybe")


def test_training_mode_is_restored():
    model = tiny_model("llama").train()
    assert check_generation(model, checks=["cache"]).ok
    assert model.training


def test_patches_off_runs_inside_disabled():
    import hf_genfix

    report = check_generation(tiny_model("llama"), checks=["cache", "right-padding"], patches="off")
    assert report["cache"].passed
    assert report.patches == []  # nothing was installed while the checks ran
    if "right-padding" in {s.id for s in hf_genfix.status()}:
        assert report["right-padding"].outcome == "skipped"


def test_window_cropped_mask_is_named_past_the_window():
    from genfix_broken_models import WindowCroppedMaskMistral

    report = check_generation(build(WindowCroppedMaskMistral, "mistral", sliding_window=8),
                              checks=["sliding-window"])
    past = report["sliding-window"]
    assert past.failed, str(report)
    assert "attention mask does not follow the cache" in past.message
    assert "8 columns" in past.message


# The patches whose defects make assisted decoding fail past a sliding window (patches/sliding_window/).
ASSISTED_PAST_WINDOW = ("sliding-window-dynamic-full", "sliding-window-rollback-cache", "sliding-window-draft-keys")


def test_sliding_model_passes_and_assisted_fails_without_the_patch_where_the_release_is_affected():
    import hf_genfix
    from hf_genfix.oracles.sliding import sliding_model

    model = sliding_model("mistral")
    before = model.generation_config.to_dict()
    report = check_generation(model, assistant_model=True)
    assert report.ok, str(report)
    assert report["sliding-window"].passed and report["assisted"].passed, str(report)
    assert model.generation_config.to_dict() == before  # the drafting setup was undone
    applied = [s.id for s in hf_genfix.status() if s.id in ASSISTED_PAST_WINDOW and s.state == "applied"]
    without = check_generation(model, assistant_model=True, checks=["assisted"], patches="off")["assisted"]
    if applied:
        assert without.failed, f"{applied} applied, yet assisted decoding passes without them"
        assert "assisted decoding" in without.message and "raised" in without.message
    else:
        assert without.passed, without.message


def test_decode_loop_check_sees_what_the_prepare_inputs_patch_fixes():
    import hf_genfix

    if "prepare-inputs" not in {s.id for s in hf_genfix.status()}:
        pytest.skip("this build has no prepare-inputs patch")
    model = tiny_model("gpt2")
    assert check_generation(model, checks=["decode-loop"])["decode-loop"].passed
    without = check_generation(model, checks=["decode-loop"], patches="off")["decode-loop"]
    # Every release fails a hand-written loop somewhere: cache_position required up to 5.2, no trimming and no
    # positions from the mask from 5.3 (docs: evidence section B).
    assert without.failed
    assert "Likely cause" in without.message or "raised" in without.message
