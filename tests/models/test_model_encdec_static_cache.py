"""model-<led|fsmt|mvp|nllb-moe|seamless-m4t(-v2)>-static-cache: an encoder-decoder with a static cache equals each
row alone (or, where the static layer cannot be masked, refuses with a clear error).

On releases inside a patch's range with hf_genfix active: a padded encoder batch, greedy generation with
``cache_implementation="static"``, every row and step against a no-cache forward of that row alone; the same with the
patch off fails there from step 0 (the new token weights the static cache's unfilled zero slots); the dynamic cache
and uncached generation are bitwise what upstream gives; the mask written hides exactly the unwritten slots.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix._registry import in_range  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles.sweep import families as families  # noqa: E402

PATCHES = {"led": "model-led-static-cache", "fsmt": "model-fsmt-static-cache", "mvp": "model-mvp-static-cache",
           "nllb-moe": "model-nllb-moe-static-cache", "seamless_m4t": "model-seamless-m4t-static-cache",
           "seamless_m4t_v2": "model-seamless-m4t-v2-static-cache"}


@pytest.fixture(autouse=True)
def patches_decided():
    from hf_genfix.doctor import import_targets

    import_targets()


@pytest.fixture(scope="module", params=sorted(PATCHES))
def subject(request):
    try:
        return families.Seq2SeqSubject(request.param)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


@pytest.fixture(autouse=True)
def fresh(request):
    """Each test starts as a fresh generate() would: a refused run leaves generate()'s kept static cache
    uninitialised, and upstream's next static run on that model would fail on it (AttributeError)."""
    if "subject" in request.fixturenames:
        families._fresh(request.getfixturevalue("subject").model)


def _affected(patch: str) -> bool:
    manifest = next(m for m in hf_genfix._activation.registry().manifests() if m.id == patch)
    return in_range(manifest.affected, transformers.__version__)


def test_a_static_cache_is_each_row_alone(subject):
    if not _affected(PATCHES[subject.model_type]):
        pytest.skip(f"outside {PATCHES[subject.model_type]}'s range on {transformers.__version__}")
    from hf_genfix._patches.models.shared.static_self_attention import StaticCacheUnsupported

    try:
        figures = families.s2s_static_cache(subject)
    except StaticCacheUnsupported as exc:  # loud where the static layer is not told where it writes
        assert PATCHES[subject.model_type] in str(exc) and "=off" in str(exc) and "dynamic cache" in str(exc)
        return
    assert figures["max_logit_diff"] <= 1e-4


def test_without_the_patch_the_static_cache_is_wrong_from_step_0(subject):
    patch = PATCHES[subject.model_type]
    if not _affected(patch):
        pytest.skip(f"{patch} is outside its range on {transformers.__version__}")
    with hf_genfix.disabled(patch), pytest.raises(DefectObserved, match="generated step 0"):
        families.s2s_static_cache(subject)


@pytest.mark.parametrize("options", [dict(), dict(use_cache=False)], ids=["dynamic", "uncached"])
def test_other_caches_are_upstream_bitwise(subject, options):
    import torch

    from hf_genfix.oracles.sweep.families import right_pad

    ids, mask = right_pad(subject.rows(8, 5, seed=3), device=subject.model.device)
    kwargs = dict(input_ids=ids, attention_mask=mask)
    common = dict(max_new_tokens=4, do_sample=False, return_dict_in_generate=True, output_logits=True, **options)
    with torch.no_grad():
        ours = subject.model.generate(**kwargs, **common)
        with hf_genfix.disabled(PATCHES[subject.model_type]):
            upstream = subject.model.generate(**kwargs, **common)
    assert torch.equal(ours.sequences, upstream.sequences)
    assert all(torch.equal(a, b) for a, b in zip(ours.logits, upstream.logits))


def test_the_mask_hides_the_unwritten_slots_only():
    import torch

    from hf_genfix._patches.models.shared.static_self_attention import StaticCacheUnsupported, unfilled_mask

    class Layer:
        max_cache_len = 6
        cumulative_length = torch.tensor(2)

    mask = unfilled_mask(Layer(), 2, 3, torch.float32, "cpu", None, "why")
    assert mask.shape == (3, 1, 2, 6)
    visible = mask[0, 0] == 0
    assert visible.tolist() == [[True] * 3 + [False] * 3, [True] * 4 + [False] * 2]
    given = unfilled_mask(Layer(), 1, 1, torch.float32, "cpu", torch.tensor([4]), "why")
    assert (given[0, 0, 0] == 0).tolist() == [True] * 5 + [False]

    class Unknown:
        max_cache_len = 6

    with pytest.raises(StaticCacheUnsupported, match="why"):
        unfilled_mask(Unknown(), 1, 1, torch.float32, "cpu", None, "why")


def test_fsmt_below_5_18_refuses_a_static_cache_without_the_positions_patch():
    from hf_genfix._patches.models.shared.static_self_attention import StaticCacheUnsupported

    if not (_affected(PATCHES["fsmt"]) and _affected("model-fsmt-cached-positions")):
        pytest.skip(f"the FSMT positions defect is not in {transformers.__version__}")
    subject = families.Seq2SeqSubject("fsmt")
    with hf_genfix.disabled("model-fsmt-cached-positions"), pytest.raises(StaticCacheUnsupported,
                                                                         match="HF_GENFIX_MODEL_FSMT_STATIC_CACHE=off"):
        families.s2s_static_cache(subject)


@pytest.mark.parametrize("scenario", ["s2s_cached", "s2s_padded", "s2s_beam"])
def test_fsmt_cached_positions(scenario):
    if not _affected("model-fsmt-cached-positions"):
        pytest.skip(f"model-fsmt-cached-positions is outside its range on {transformers.__version__}")
    subject = families.Seq2SeqSubject("fsmt")
    figures = getattr(families, scenario)(subject)
    assert figures.get("max_logit_diff", figures.get("max_score_diff")) <= 1e-4
    # beam search is wrong the same way in a batch and alone: its scores against a no-cache forward show it
    with hf_genfix.disabled("model-fsmt-cached-positions"), pytest.raises(
            DefectObserved, match="no-cache forward" if scenario == "s2s_beam" else "generated step 1"):
        getattr(families, scenario)(subject)
