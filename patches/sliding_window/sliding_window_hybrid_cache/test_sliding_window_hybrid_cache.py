"""``sliding-window-hybrid-cache``: ``cache_implementation="sliding_window"`` keeps every token for the layers that
attend to all of them.

Where the patch is applied: a config whose window no layer uses (Qwen-2 with ``use_sliding_window`` and
``max_window_layers`` at its depth: every layer full, the SmolLM3 case the sweep found) generates what a no-cache
forward gives, and with the patch off does not; a model whose every layer slides (Mistral, 4.55's Qwen-3-MoE)
keeps the ``SlidingWindowCache`` it asked for, bitwise; a model whose layers share keys and values (Gemma-3n) gets a
full cache. The probe (Gemma-2, sliding and full layers) is ``TestPatch``'s.
"""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import DefectObserved  # noqa: E402
from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps  # noqa: E402
from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise  # noqa: E402

PID = "sliding-window-hybrid-cache"
ROW = [17, 44, 91, 23, 5, 60, 12, 77, 30, 9, 41, 8]


def _check(model):
    import torch

    ids = torch.tensor([ROW])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = generate_steps(model, ids, torch.ones_like(ids), max_new_tokens=6, cache_implementation="sliding_window",
                             pad_token_id=0, eos_token_id=None)
    return check_rows_against_reference(model, [ROW], run, "cache_implementation='sliding_window'", eos_token_id=[])


@pytest.fixture
def unused_window(require_applied, tiny):
    """A Qwen-2 whose config has a window of 4 that no layer uses (max_window_layers = its depth)."""
    require_applied(PID)
    model = tiny("qwen2", use_sliding_window=True, sliding_window=4, max_window_layers=64)
    if getattr(model.config, "sliding_window", None) is None or not getattr(model.config, "layer_types", None):
        pytest.skip("this release's Qwen-2 config drops the window or has no layer_types (before 4.53: upstream's)")
    return model


def test_a_window_no_layer_uses_keeps_every_token(unused_window):
    assert _check(unused_window)["max_logit_diff"] <= 1e-4


def test_without_the_patch_every_layer_forgets(unused_window):
    with hf_genfix.disabled(PID), pytest.raises(DefectObserved):
        _check(unused_window)


@pytest.mark.parametrize("model_type, overrides", [
    ("mistral", {"sliding_window": 4}),
    # 4.55's Qwen-3-MoE: no layer_types, and every attention module slides whatever max_window_layers says (a
    # guess from the config alone served it a full cache: right, but not upstream's bits; the sweep, 4.55.4)
    ("qwen3_moe", {"use_sliding_window": True, "sliding_window": 4, "max_window_layers": 1}),
])
def test_a_model_whose_every_layer_slides_keeps_its_cache(require_applied, tiny, model_type, overrides):
    import torch

    require_applied(PID)
    model = tiny(model_type, **overrides)
    windows = [getattr(m, "sliding_window", 0) for n, m in model.named_modules() if n.endswith("self_attn")]
    if None in windows:  # a full layer (0: the module does not say; the config does)
        pytest.skip(f"{model_type}'s attention modules here do not all slide")
    ids = torch.tensor([ROW])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with hf_genfix.disabled(PID), torch.no_grad():
                model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=2, do_sample=False,
                               cache_implementation="sliding_window", pad_token_id=0)
        except RuntimeError as exc:  # 4.46: a prompt past the window fails in upstream's sliding cache (loud)
            with pytest.raises(type(exc)), torch.no_grad():
                model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=2, do_sample=False,
                               cache_implementation="sliding_window", pad_token_id=0)
            return
        assert_upstream_bitwise(model, PID, ids, attention_mask=torch.ones_like(ids),
                                cache_implementation="sliding_window")



def test_a_model_whose_layers_share_keys_gets_a_full_cache(require_applied):
    """Gemma-3n (4.53-4.55): "sliding_window" is served as "static", not "hybrid", whose window its KV-sharing layers
    read wrong (model-gemma3n-hybrid-cache, off here so that this patch's own choice is what runs)."""
    from hf_genfix.oracles.sweep.continuations import loud_model

    from transformers import CONFIG_MAPPING

    require_applied(PID)
    if "gemma3n_text" not in CONFIG_MAPPING:
        pytest.skip("no Gemma-3n before 4.53")
    model = loud_model("gemma3n_text", sliding_window=4)
    with hf_genfix.disabled("model-gemma3n-hybrid-cache"):
        assert _check(model)["max_logit_diff"] <= 1e-4  # 12 tokens past a window of 4


class TestPatch(PatchTests):
    """``sliding-window-hybrid-cache``: its probe proves it on this release; its plain program gets it installed."""
