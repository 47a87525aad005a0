"""sliding-window-static-prefill-chunks (4.51-4.55): chunked prefill past the window into a static cache with
sliding layers is refused; every other chunked prefill is upstream's.

Where the patch is applied: Gemma-2 with cache_implementation="hybrid" and a prompt longer than the window raises
the refusal (and is silently wrong with the patch off); the same call with a prompt within the window, a dynamic
cache, or a static cache without sliding layers is bitwise upstream's. Elsewhere the tests skip.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix import catalog  # noqa: E402
from hf_genfix.oracles import DefectObserved  # noqa: E402
from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise  # noqa: E402

PID = "sliding-window-static-prefill-chunks"


@pytest.fixture
def gemma2(require_applied):
    from hf_genfix.oracles.sweep import Subject

    require_applied(PID)
    return Subject("gemma2")


def _prompt(subject, length):
    import torch

    (row,) = subject.rows(length, seed=3)
    return row, torch.tensor([row])


def test_a_prompt_past_the_window_is_refused_with_the_switch(gemma2):
    import torch

    refusal = catalog.fix(PID).SlidingStaticPrefillChunksUnsupported
    _, ids = _prompt(gemma2, 19)
    with pytest.raises(refusal, match="HF_GENFIX_SLIDING_WINDOW_STATIC_PREFILL_CHUNKS=off"), torch.no_grad():
        gemma2.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=2, do_sample=False,
                              prefill_chunk_size=5, cache_implementation="hybrid", pad_token_id=0)
    assert issubclass(refusal, ValueError)


def test_without_the_patch_it_is_silently_wrong(gemma2):
    import torch

    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps

    row, ids = _prompt(gemma2, 19)
    with hf_genfix.disabled(PID):
        try:
            run = generate_steps(gemma2.model, ids, torch.ones_like(ids), max_new_tokens=4, prefill_chunk_size=5,
                                 cache_implementation="hybrid", pad_token_id=0, eos_token_id=None)
        except ValueError as exc:  # 4.54-4.55 with some lengths: upstream's own inconsistency error
            pytest.skip(f"upstream raises here: {exc}")
    with pytest.raises(DefectObserved):
        check_rows_against_reference(gemma2.model, [row], run, "patch off", eos_token_id=[])


# Within the window: the model's default cache (HybridCache on 4.51-4.52; 4.53+ keep a "hybrid" cache on the model
# between calls and refuse the next call's other length: upstream's, whatever this patch does).
@pytest.mark.parametrize("length, cache", [(9, None), (19, "dynamic"), (19, "static")],
                         ids=["within-the-window", "dynamic-cache", "no-sliding-layer"])
def test_what_upstream_gets_right_is_bitwise_upstream(gemma2, length, cache):
    import warnings

    import torch

    _, ids = _prompt(gemma2, length)
    call = dict(attention_mask=torch.ones_like(ids), prefill_chunk_size=5)
    if cache is not None:
        call["cache_implementation"] = cache
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with hf_genfix.disabled(PID), torch.no_grad():  # the call assert_upstream_bitwise makes
                gemma2.model.generate(ids, max_new_tokens=5, do_sample=False, pad_token_id=0, eos_token_id=None,
                                      **call)
        except Exception as exc:  # noqa: BLE001 - upstream raises (4.54's "hybrid": inconsistent lengths): so do we
            with pytest.raises(type(exc)), torch.no_grad():
                gemma2.model.generate(ids, max_new_tokens=5, do_sample=False, pad_token_id=0, eos_token_id=None,
                                      **call)
            return
        assert_upstream_bitwise(gemma2.model, PID, ids, **call)


class TestPatch(PatchTests):
    """``sliding-window-static-prefill-chunks``: its probe proves it on this release; its plain program gets it
    installed."""
