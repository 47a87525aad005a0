"""model-phimoe-sliding-cache, model-qwen2-moe-sliding-cache: generation past the sliding window equals the
no-cache forward.

On 4.56-4.57 (the patches apply there) upstream's cache keeps the last keys while the model's own mask is cut from
the first ones: silently wrong from the first step past the window. Elsewhere the same tests check upstream.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix._registry import in_range  # noqa: E402
from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad  # noqa: E402
from hf_genfix.oracles.sliding import prompts  # noqa: E402
from model_fixtures import patches_decided, tiny, upstream_bitwise  # noqa: E402,F401 (fixtures)

WINDOW = 8
# patch id -> (model type, config overrides): Qwen2-MoE's tiny defaults give 17M parameters (smaller experts here).
MODELS = {
    "model-phimoe-sliding-cache": ("phimoe", {}),
    "model-qwen2-moe-sliding-cache": ("qwen2_moe", dict(use_sliding_window=True, max_window_layers=0, num_experts=4,
                                                        num_experts_per_tok=2, moe_intermediate_size=16,
                                                        shared_expert_intermediate_size=16)),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request, tiny):
    model_type, overrides = MODELS[request.param]
    built = tiny(model_type, sliding_window=WINDOW, **overrides)
    built.patch_id = request.param  # which patch the test switches off
    return built


@pytest.mark.parametrize("patch_id", sorted(MODELS))
def test_the_patch_is_installed_where_the_release_has_the_defect(patch_id):
    status = next(s for s in hf_genfix.status() if s.id == patch_id)
    expected = "applied" if in_range(">=4.56.0,<5.0.0", transformers.__version__) else "not-needed"
    assert status.state == expected, (status.state, status.reason)


@pytest.mark.parametrize("lengths", [(7, 7), (12, 5)])
def test_generation_past_the_window_matches_the_no_cache_forward(model, lengths):
    rows = prompts(*lengths, seed=len(lengths[1:]) + lengths[0])
    ids, mask = left_pad(rows)
    run = generate_steps(model, ids, mask, max_new_tokens=2 * WINDOW, pad_token_id=0, eos_token_id=None)
    figures = check_rows_against_reference(model, rows, run, f"{model.patch_id}: past the window", eos_token_id=[])
    assert figures["steps_compared"] == 2 * 2 * WINDOW


def test_a_hand_written_loop_without_a_cache_gets_one_that_keeps_the_window(model):
    import torch

    from hf_genfix.helpers.decode import renames_keyword
    from hf_genfix.oracles import reference_logits

    (row,) = prompts(3 * WINDOW, seed=3)
    ids = torch.tensor([row])
    keyword = "cache" if renames_keyword(type(model).forward, "past_key_values") else "past_key_values"  # 5.24
    with torch.no_grad():
        out = model(ids[:, :WINDOW + 2], use_cache=True)
        step = model(ids[:, WINDOW + 2:WINDOW + 3], use_cache=True, **{keyword: out.past_key_values}).logits
    assert torch.allclose(step[0, -1], reference_logits(model, row[:WINDOW + 3])[-1], atol=1e-4)


def test_within_the_window_it_is_upstream_bitwise(model, upstream_bitwise):
    ids, mask = left_pad(prompts(4, 3, seed=2))
    upstream_bitwise(model, model.patch_id, ids, attention_mask=mask, max_new_tokens=3)
