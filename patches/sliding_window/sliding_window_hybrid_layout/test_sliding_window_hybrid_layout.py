"""sliding-window-hybrid-layout (4.52): cache_implementation="hybrid" gives what a no-cache forward gives on models
whose layers are not laid out as HybridCache's pattern; Gemma-2, whose layout it is, keeps upstream's cache.

Where the patch is applied: the sweep's cache-implementations scenario on Qwen-3 and Mistral passes (Qwen-3 is wrong
with the patch off); Gemma-2's "hybrid" is bitwise upstream's. Elsewhere the tests skip.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved  # noqa: E402
from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise  # noqa: E402

PID = "sliding-window-hybrid-layout"


@pytest.mark.parametrize("model_type", ["qwen3", "mistral", "qwen2"])
def test_every_cache_implementation_matches_the_no_cache_forward(require_applied, model_type):
    from hf_genfix.oracles.sweep import SCENARIOS, Subject

    require_applied(PID)
    figures = SCENARIOS["cache-implementations"](Subject(model_type))  # raises DefectObserved on a wrong step
    assert "hybrid" in figures["caches"] and figures["max_logit_diff"] <= 1e-4


def test_without_the_patch_hybrid_is_wrong(require_applied):
    import torch

    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps
    from hf_genfix.oracles.sweep import Subject

    require_applied(PID)
    subject = Subject("qwen3")
    rows = subject.rows(10, 10, seed=14)
    ids = torch.tensor(rows)
    with hf_genfix.disabled(PID):
        run = generate_steps(subject.model, ids, torch.ones_like(ids), max_new_tokens=6,
                             cache_implementation="hybrid", pad_token_id=0, eos_token_id=None)
    with pytest.raises(DefectObserved):
        check_rows_against_reference(subject.model, rows, run, "patch off", eos_token_id=[])


@pytest.mark.parametrize("model_type", ["gemma2", "gemma3_text", "cohere2"])
def test_a_model_laid_out_as_the_pattern_keeps_upstreams_cache(require_applied, model_type):
    import torch

    from hf_genfix.oracles.sweep import Subject

    require_applied(PID)
    model = Subject(model_type).model
    assert hf_genfix.catalog.fix(PID)._pattern_fits(model)
    ids = torch.tensor([list(range(3, 15))])
    assert_upstream_bitwise(model, PID, ids, attention_mask=torch.ones_like(ids), cache_implementation="hybrid")


class TestPatch(PatchTests):
    """``sliding-window-hybrid-layout``: its probe proves it on this release; its plain program gets it installed."""
