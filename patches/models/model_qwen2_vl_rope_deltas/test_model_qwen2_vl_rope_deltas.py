"""model-qwen2-vl-rope-deltas(-steps) / model-qwen2-5-vl-rope-deltas(-steps): a Qwen-VL turn that continues a cache
takes the M-RoPE offsets of the prompt that cache holds, whatever the model read in between.

Where a patch is applied (``-steps``: Qwen2-VL 4.47-5.1, Qwen2.5-VL 4.49-5.1, 4.56 excepted; plain: Qwen2-VL from
5.2, Qwen2.5-VL on 5.2 and from 5.11; the releases between are on file in patches/open-findings.json; on 5.2 with
model-qwen2*-vl-padded-deltas for the offsets of a padded row): a left-padded batch
whose images have 4 and 8 soft tokens, loud weights; a second turn from ``out.past_key_values`` after other calls of
the model, and two continuations of a ``copy.deepcopy``'d prompt cache, each against the no-cache forward of the
whole conversation of each row; the same second turn with the patch off is wrong; a plain ``generate()`` and a
second turn with nothing in between are bitwise upstream's; a cache filled with the patch off carries no note and
continues as upstream does. Elsewhere no patch is installed and these tests skip.
"""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles.sweep import families as families  # noqa: E402
from hf_genfix.oracles.sweep import imagetext as imagetext  # noqa: E402
from hf_genfix.oracles.sweep import SCENARIOS  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

IDS = {"qwen2_vl": ("model-qwen2-vl-rope-deltas", "model-qwen2-vl-rope-deltas-steps"),
       "qwen2_5_vl": ("model-qwen2-5-vl-rope-deltas", "model-qwen2-5-vl-rope-deltas-steps")}


@pytest.fixture(scope="module", params=sorted(IDS))
def subject(request):
    from hf_genfix.doctor import import_targets

    import_targets()
    states = {s.id: s.state for s in hf_genfix.status()}
    applied = [pid for pid in IDS[request.param] if states.get(pid) == "applied"]
    if not applied:
        pytest.skip(f"no {request.param} rope-deltas patch is applied here")
    try:
        subject = families.ImageTextSubject(request.param)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))
    subject.patch = applied[0]
    return subject


def test_a_second_turn_after_other_calls_matches_the_whole_conversation(subject):
    assert SCENARIOS["image-second-turn-text-padded"](subject)["max_logit_diff"] <= 1e-4


def test_without_the_patch_the_second_turn_takes_another_prompts_offsets(subject):
    with hf_genfix.disabled(subject.patch), pytest.raises(DefectObserved, match="second turn") as caught:
        SCENARIOS["image-second-turn-text-padded"](subject)
    assert caught.value.figures["max_logit_diff"] > 0.5  # loud weights: units, not rounding


def test_deep_copied_prompt_caches_continue_from_their_own_offsets(subject):
    assert SCENARIOS["image-prefix-reuse-text-padded"](subject)["max_logit_diff"] <= 1e-4


def _two_turns(subject, between: bool, patched: bool = True):
    """Turn 1, maybe a no-cache forward of another prompt, turn 2 from the returned cache: turn 2's output."""
    import contextlib

    prompts, images = imagetext._rows(subject, (6, 3), seed=40)
    kwargs = imagetext._inputs(subject, prompts, images)
    width = kwargs["input_ids"].shape[1]
    with contextlib.ExitStack() as stack:
        stack.enter_context(imagetext.loud(subject.model))
        if not patched:
            stack.enter_context(hf_genfix.disabled(subject.patch))
        first = imagetext._generate(subject, kwargs, max_new_tokens=3)
        if between:
            subject.reference(prompts[1], images[1], [])
        said = [first.sequences[b, width:].tolist() + [7, 8, 9, 10] for b in range(len(prompts))]
        cache = imagetext._returned_cache(first)
        return first, cache, imagetext._inputs(subject, prompts, images, said, pixels=False)


def test_where_upstream_is_right_it_is_bitwise_upstream(subject):
    """Nothing between the turns (upstream's stored offsets are the cache's own): identical sequences and logits,
    and the first turn (a plain cached generate()) too."""
    import torch

    runs = []
    for patched in (True, False):
        first, cache, kwargs2 = _two_turns(subject, between=False, patched=patched)
        with imagetext.loud(subject.model), (hf_genfix.disabled(subject.patch) if not patched else _nothing()):
            second = imagetext._generate(subject, kwargs2, max_new_tokens=4, past_key_values=cache)
        runs.append((first, second))
    (a1, a2), (b1, b2) = runs
    for x, y in ((a1, b1), (a2, b2)):
        assert torch.equal(x.sequences, y.sequences)
        assert all(torch.equal(p, q) for p, q in zip(x.logits, y.logits))


def test_a_call_whose_offsets_are_already_the_caches_reaches_nothing(subject):
    """The sweep's differential runs upstream again only for a run that reached a patch (``Recorder.unchanged``):
    two turns with nothing between restore nothing, so they reach no rope-deltas wrapper; a no-cache forward of
    another prompt between them makes the second turn restore the cache's offsets, which it reaches (and records)."""
    import hf_genfix
    from hf_genfix import _patcher

    for between in (False, True):
        with _patcher.watching() as reached, hf_genfix.recording() as calls:
            first, cache, kwargs2 = _two_turns(subject, between=between)
            with imagetext.loud(subject.model):
                imagetext._generate(subject, kwargs2, max_new_tokens=4, past_key_values=cache)
        assert (subject.patch in reached) == between, (between, reached)
        assert (calls.counts.get(subject.patch, (0, 0))[1] > 0) == between


def test_a_cache_filled_without_the_patch_continues_as_upstream(subject):
    """No note on the cache (filled with the patch off, e.g. before hf_genfix was imported): the continuation reads
    the model's stored offsets, as upstream does, bitwise."""
    import torch

    outs = []
    for patched in (True, False):
        first, cache, kwargs2 = _two_turns(subject, between=True, patched=False)
        assert not hasattr(cache, imagetext_note())
        with imagetext.loud(subject.model), (hf_genfix.disabled(subject.patch) if not patched else _nothing()):
            outs.append(imagetext._generate(subject, kwargs2, max_new_tokens=4, past_key_values=copy.deepcopy(cache)))
    assert torch.equal(outs[0].sequences, outs[1].sequences)
    assert all(torch.equal(p, q) for p, q in zip(outs[0].logits, outs[1].logits))


def imagetext_note() -> str:
    from hf_genfix._patches.models.shared.qwen2_vl_rope_deltas import NOTE

    return NOTE


def _nothing():
    import contextlib

    return contextlib.nullcontext()


class TestPatch(PatchTests):
    """``model-qwen2-vl-rope-deltas``: its probe proves it on this release; its plain program gets it installed."""
