"""A local remote-code model (``configuration_*.py`` / ``modeling_*.py`` loaded with ``trust_remote_code=True``)
whose ``prepare_inputs_for_generation`` is written the 4.40 way (``seen_tokens``, ``get_max_length()``,
``past_key_values`` only): ``generate()`` and hand-written loops must match the reference and use the cache."""

from __future__ import annotations

import pytest

from prepare_inputs_models import model_of, patches_on

# The remote model's 4.40-style override passes past_key_values= to transformers: 5.24's FutureWarning is what that
# code gets without hf_genfix too.
pytestmark = pytest.mark.filterwarnings("ignore:`past_key_values` is deprecated:FutureWarning")

pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def remote_model(tmp_path_factory):
    from hf_genfix.oracles.legacy import load_remote_model, write_remote_model

    model_of("llama")  # patches decided before the remote class is created
    repo = write_remote_model(tmp_path_factory.mktemp("hub") / "tinylegacy")
    return load_remote_model(repo)


def test_remote_class_is_loaded_from_the_repo_and_wrapped(remote_model):
    cls = type(remote_model)
    assert cls.__module__.startswith("transformers_modules"), cls.__module__
    on_override = patches_on(vars(cls)["prepare_inputs_for_generation"])
    assert "prepare-inputs" in on_override
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix._manifest import load_dir

    legacy = next(m for m in load_dir() if m.id == "legacy-cache")
    assert ("legacy-cache" in on_override) == in_range(legacy.affected, transformers_version())


def test_generate_matches_reference_and_uses_the_cache(remote_model):
    from hf_genfix.oracles.legacy import check_legacy_generate

    figures = check_legacy_generate(remote_model)
    assert figures["forwards"] == 4


@pytest.mark.parametrize("grow_mask", [True, False], ids=["mask-grown", "mask-never-grown"])
@pytest.mark.parametrize("cache_key", ["past_key_values", "cache"])
def test_manual_loop_matches_reference(remote_model, grow_mask, cache_key):
    from hf_genfix.oracles.decode import check_manual_loop

    check_manual_loop(remote_model, grow_mask=grow_mask, cache_key=cache_key)


def test_without_legacy_cache_the_defect_shows_exactly_where_the_catalog_says(remote_model):
    import hf_genfix
    from hf_genfix._manifest import load_dir
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.legacy import check_legacy_generate

    legacy = next(m for m in load_dir() if m.id == "legacy-cache")
    with hf_genfix.disabled("legacy-cache"):
        assert "legacy-cache" not in patches_on(vars(type(remote_model))["prepare_inputs_for_generation"])
        if in_range(legacy.affected, transformers_version()):
            with pytest.raises(DefectObserved):
                check_legacy_generate(remote_model)
        else:
            check_legacy_generate(remote_model)


def test_legacy_view_reads_like_the_4_40_cache():
    import torch

    from transformers import DynamicCache

    from hf_genfix import catalog
    LegacyCacheView = catalog.fix('legacy-cache').LegacyCacheView
    from hf_genfix.helpers.decode import cache_from_outputs

    model = model_of("llama")
    with torch.no_grad():
        cache = cache_from_outputs(model(input_ids=torch.tensor([[5, 6, 7, 8]]), use_cache=True))
    if isinstance(cache, tuple):  # 4.40 - 4.46 return the legacy format when they built the cache themselves
        cache = DynamicCache.from_legacy_cache(cache)
    view = LegacyCacheView(cache)
    assert isinstance(view, type(cache))
    assert view.seen_tokens == 4 and view.get_seq_length() == 4
    assert view.get_max_length() is None  # unbounded, as in 4.40 (5.13+ itself says -1)
    assert view.get_usable_length(1) == 4
    assert bool(view) and len(view) == model.config.num_hidden_layers
    key, value = view[0]
    assert key.shape[-2] == 4 and value.shape[-2] == 4
    assert len(view.to_legacy_cache()) == len(list(view)) == model.config.num_hidden_layers
    empty = LegacyCacheView(DynamicCache())
    assert not empty and len(empty) == 0 and empty.seen_tokens == 0
