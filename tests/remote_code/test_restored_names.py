"""Restored names exist for remote code only, and behave as in the last release that had them."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


def _loader_wrapper(names=None, modules=None):
    from hf_genfix.toolkit.remote_code import restoring

    seen = {}

    def loader():
        seen["mask_utils"] = importlib.import_module("transformers.modeling_attn_mask_utils")
        from transformers.utils.import_utils import is_torch_fx_available

        seen["fx"] = is_torch_fx_available()
        return seen

    return restoring(modules=modules, names=names), loader


def test_served_only_while_remote_code_loads():
    from hf_genfix import catalog
    mask_fix = catalog.fix('remote-code-attn-mask-utils')
    from hf_genfix import catalog
    names_fix = catalog.fix('remote-code-removed-names')

    import transformers.utils.import_utils as import_utils

    had_module = importlib.util.find_spec("transformers.modeling_attn_mask_utils") is not None
    had_fx = hasattr(import_utils, "is_torch_fx_available")
    wrapper, loader = _loader_wrapper(names=names_fix.NAMES, modules={mask_fix.MODULE: mask_fix._module})
    seen = wrapper(loader, None, (), {})
    assert seen["fx"] is True
    assert hasattr(seen["mask_utils"], "_prepare_4d_causal_attention_mask")
    # Afterwards nothing that was missing is visible.
    assert hasattr(import_utils, "is_torch_fx_available") == had_fx
    if not had_module:
        assert "transformers.modeling_attn_mask_utils" not in sys.modules
        with pytest.raises(ImportError):
            importlib.import_module("transformers.modeling_attn_mask_utils")


def test_constraints_import_but_refuse_to_run():
    from hf_genfix import catalog
    _removed_constraint = catalog.fix('remote-code-removed-names')._removed_constraint

    cls = _removed_constraint("DisjunctiveConstraint")
    with pytest.raises(NotImplementedError, match="removed in transformers 5.0"):
        cls([[1, 2]])


@pytest.mark.parametrize("sliding_window", [None, 3])
@pytest.mark.parametrize("past", [0, 4])
def test_mask_helpers_equal_the_release_module_where_it_exists(sliding_window, past):
    upstream = pytest.importorskip("transformers.modeling_attn_mask_utils")
    if getattr(upstream, "__file__", "").endswith("_legacy_attn_mask_utils.py"):
        pytest.skip("this release has no modeling_attn_mask_utils to compare with")
    from hf_genfix._patches.remote_code.shared import legacy_attn_mask_utils as ours

    embeds = torch.zeros(2, 5, 8)
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1, 1], [1] * 9])[:, -(5 + past):]
    for name in ("_prepare_4d_causal_attention_mask", "_prepare_4d_causal_attention_mask_for_sdpa"):
        for m in (mask, None, torch.ones_like(mask)):
            a = getattr(ours, name)(m, (2, 5), embeds, past, sliding_window=sliding_window)
            b = getattr(upstream, name)(m, (2, 5), embeds, past, sliding_window=sliding_window)
            assert (a is None) == (b is None), (name, m)
            if a is not None:
                assert torch.equal(a, b), (name, m, sliding_window, past)
    assert torch.equal(ours._prepare_4d_attention_mask(mask, torch.float32, 5),
                       upstream._prepare_4d_attention_mask(mask, torch.float32, 5))


def test_rope_scaling_reads_the_4x_value():
    from hf_genfix import catalog
    old_rope_scaling = catalog.fix('remote-code-rope-scaling').old_rope_scaling

    assert old_rope_scaling({"rope_theta": 10000.0, "rope_type": "default"}) is None
    assert old_rope_scaling({"type": "linear", "factor": 2.0, "rope_theta": 1e4, "rope_type": "linear"}) == {
        "type": "linear", "factor": 2.0, "rope_type": "linear"}
    assert old_rope_scaling({"rope_type": "yarn", "factor": 4.0}) == {"rope_type": "yarn", "factor": 4.0,
                                                                       "type": "yarn"}
    assert old_rope_scaling(None) is None


def test_extract_past_has_both_old_meanings():
    from transformers.modeling_outputs import CausalLMOutputWithPast

    from hf_genfix import catalog
    extract_past_from_model_output = catalog.fix('remote-code-model-methods').extract_past_from_model_output

    out = CausalLMOutputWithPast(logits=torch.zeros(1, 1, 2), past_key_values=((torch.ones(1),),))
    assert extract_past_from_model_output(object(), out, standardize_cache_format=False) is out.past_key_values
    assert extract_past_from_model_output(object(), out) == ("past_key_values", out.past_key_values)


def test_head_mask_as_in_4_57():
    from hf_genfix import catalog
    get_head_mask = catalog.fix('remote-code-model-methods').get_head_mask

    model = type("M", (), {"dtype": torch.float32})()
    assert get_head_mask(model, None, 3) == [None, None, None]
    assert get_head_mask(model, torch.ones(4), 3).shape == (3, 1, 4, 1, 1)
    assert get_head_mask(model, torch.ones(3, 4), 3).shape == (3, 1, 4, 1, 1)


def test_check_generation_names_the_removed_api_a_remote_model_uses(tmp_path):
    from hf_genfix.toolkit.remote_code import removed_api
    from hf_genfix.oracles.legacy_models import load_family, write_family
    from hf_genfix.testing import check_generation

    model = load_family(write_family("phi3", tmp_path / f"phi3_{tmp_path.name}"))  # own module folder per run
    found = {what: patch for what, _, patch in removed_api(type(model))}
    assert "Cache.get_usable_length()" in found and "DynamicCache.from_legacy_cache()" in found
    assert "transformers.modeling_attn_mask_utils" in found and 'config.rope_scaling["type"]' in found
    report = check_generation(model, checks=["cache"], patches="off", max_new_tokens=3)
    from hf_genfix._registry import in_range, transformers_version

    if in_range(">=4.49.0", transformers_version()):  # without hf_genfix the model crashes there
        (result,) = report.checks
        assert not result.passed
        assert "remote-code-cache-api" in result.message and "get_usable_length" in result.message


def test_beam_modules_and_flash_helper_served_while_remote_code_loads():
    from hf_genfix import catalog
    names_fix = catalog.fix('remote-code-removed-names')
    from hf_genfix.toolkit.remote_code import _exists

    missing = {m for m in names_fix.MODULES if not _exists(m)}
    import transformers.utils as utils

    had_flash = hasattr(utils, "is_flash_attn_greater_or_equal_2_10")

    def loader():
        from transformers.generation.beam_constraints import DisjunctiveConstraint, PhrasalConstraint
        from transformers.generation.beam_search import BeamSearchScorer
        from transformers.utils import is_flash_attn_greater_or_equal_2_10

        return DisjunctiveConstraint, PhrasalConstraint, BeamSearchScorer, is_flash_attn_greater_or_equal_2_10()

    from hf_genfix.toolkit.remote_code import restoring

    *classes, flash = restoring(modules=names_fix.MODULES, names=names_fix.NAMES)(loader, None, (), {})
    assert flash in (True, False)
    if missing:  # 5.0+: placeholders that refuse to run
        with pytest.raises(NotImplementedError, match="removed in transformers 5.0"):
            classes[-1]()
    for module in missing:  # and gone again afterwards
        assert module not in sys.modules
        with pytest.raises(ImportError):
            importlib.import_module(module)
    assert hasattr(utils, "is_flash_attn_greater_or_equal_2_10") == had_flash


def _tiny_llama(**config):
    from hf_genfix.oracles.tiny import tiny_model

    return tiny_model("llama", **config)


@pytest.mark.parametrize("is_decoder", [False, True])
def test_extended_attention_masks_equal_the_release_methods_where_they_exist(is_decoder):
    from transformers.modeling_utils import PreTrainedModel

    from hf_genfix import catalog
    get_extended_attention_mask = catalog.fix('remote-code-model-methods').get_extended_attention_mask
    invert_attention_mask = catalog.fix('remote-code-model-methods').invert_attention_mask

    model = _tiny_llama()
    model.config.is_decoder = is_decoder
    mask = torch.tensor([[0, 1, 1, 1], [1, 1, 1, 1]])
    ours = get_extended_attention_mask(model, mask, (2, 4))
    assert ours.shape == ((2, 1, 4, 4) if is_decoder else (2, 1, 1, 4))
    assert bool((ours[0, ..., 0] < -1e30).all()) and float(ours[1].max()) == 0.0
    # 4.x callers pass the device third (ignored); 5.x callers may pass the dtype third
    assert torch.equal(get_extended_attention_mask(model, mask, (2, 4), mask.device), ours)
    assert get_extended_attention_mask(model, mask, (2, 4), torch.float16).dtype == torch.float16
    inverted = invert_attention_mask(model, mask)
    if hasattr(PreTrainedModel, "get_extended_attention_mask"):  # up to 5.16.1: the release's own methods
        assert torch.equal(model.get_extended_attention_mask(mask, (2, 4)), ours)
        assert torch.equal(model.invert_attention_mask(mask), inverted)


def test_restored_methods_exist_for_old_remote_code_only(tmp_path):
    import hf_genfix
    from hf_genfix.oracles.legacy_models import load_family, write_family

    model = _tiny_llama()
    remote = load_family(write_family("chatglm3", tmp_path / f"glm_{tmp_path.name}"))
    for name in ("get_head_mask", "get_extended_attention_mask", "invert_attention_mask", "_get_logits_warper"):
        from transformers.modeling_utils import PreTrainedModel

        if not hasattr(PreTrainedModel, name):  # a release without it: nothing but old code may see it
            assert not hasattr(model, name)
            with pytest.raises(AttributeError, match=f"has no attribute '{name}'"):
                getattr(model, name)
    if "_get_logits_warper" in vars(PreTrainedModel):  # restored here (4.45+): the ChatGLM file calls it
        assert callable(remote._get_logits_warper)
        with hf_genfix.disabled("remote-code-model-methods"):
            assert not hasattr(remote, "_get_logits_warper")


def test_logits_warper_as_in_4_44_and_not_twice_after_4_45(tmp_path):
    from transformers import GenerationConfig

    from hf_genfix import catalog
    get_logits_warper = catalog.fix('remote-code-model-methods').get_logits_warper
    from hf_genfix.oracles.legacy_models import load_family, write_family

    config = GenerationConfig(temperature=0.7, top_k=5, top_p=0.9, do_sample=False)
    model = _tiny_llama()
    assert [type(w).__name__ for w in get_logits_warper(model, config)] == [
        "TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper"]
    # Old code that also calls _get_logits_processor gets the warpers there when sampling (4.45+ folds them in).
    remote = load_family(write_family("chatglm3", tmp_path / f"glm_{tmp_path.name}"))
    sampling = GenerationConfig(temperature=0.7, top_k=5, top_p=0.9, do_sample=True)
    assert len(get_logits_warper(remote, sampling)) == 0
    assert len(get_logits_warper(model, sampling)) == 3


def test_unprepared_config_is_prepared_on_a_copy():
    import copy

    import hf_genfix
    from hf_genfix._registry import in_range, transformers_version
    from transformers import GenerationConfig
    from transformers.generation.logits_process import LogitsProcessorList
    from transformers.generation.stopping_criteria import StoppingCriteriaList

    model = _tiny_llama()
    config = GenerationConfig(eos_token_id=2, min_new_tokens=2, repetition_penalty=1.3, max_length=9)
    before = copy.deepcopy(config.to_dict())
    processors = model._get_logits_processor(generation_config=config, input_ids_seq_length=4,
                                             encoder_input_ids=torch.ones(1, 4, dtype=torch.long),
                                             prefix_allowed_tokens_fn=None, logits_processor=LogitsProcessorList())
    criteria = model._get_stopping_criteria(generation_config=config, stopping_criteria=StoppingCriteriaList())
    assert config.to_dict() == before and not hasattr(config, "_eos_token_tensor")
    names = [type(p).__name__ for p in processors]
    assert "RepetitionPenaltyLogitsProcessor" in names
    assert "MinNewTokensLengthLogitsProcessor" in names  # 5.x leaves it out of an unprepared config silently
    if in_range(">=4.43.0", transformers_version()):
        assert "EosTokenCriteria" in [type(c).__name__ for c in criteria]
        with hf_genfix.disabled("decoding-unprepared-config"), pytest.raises(AttributeError, match="_eos_token"):
            model._get_stopping_criteria(generation_config=config, stopping_criteria=StoppingCriteriaList())
    # A prepared config (what generate() passes) goes through as it is.
    model._prepare_special_tokens(config, None, device=model.device)
    assert [type(p).__name__ for p in model._get_logits_processor(
        generation_config=config, input_ids_seq_length=4, encoder_input_ids=torch.ones(1, 4, dtype=torch.long),
        prefix_allowed_tokens_fn=None, logits_processor=LogitsProcessorList())] == names
