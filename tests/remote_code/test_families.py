"""Old trust_remote_code models of five families (our tiny repos using their API patterns, see
``hf_genfix.oracles.legacy_models``) load and generate on every release with hf_genfix, and fail without it
exactly on the releases measured.

Oracle (``check_family``): greedy ``generate()`` on a batch (left-padded, equal lengths for chatglm3) equals
greedy decoding by full no-cache forwards of each unpadded row, and after the prefill every forward receives one
new token and a cache holding the sequence so far.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_genfix.oracles.legacy_models import FAMILIES  # noqa: E402

# Releases on which the family fails without hf_genfix (measured 4.40.2 .. 5.24.0; docs/remote-code.md).
FAILS_WITHOUT = {
    "phi3": ">=4.49.0",
    "deepseek": ">=4.48.0,!=4.48.2,!=4.48.3",  # 4.48.0-4.48.1: is_torch_greater_or_equal_than_1_13
    "minicpm": ">=4.48.0,!=4.48.2,!=4.48.3",  # 4.48.0-4.48.1: is_torch_greater_or_equal_than_1_13
    "internlm2": ">=4.54.0",
    "chatglm3": ">=4.42.0",
    "chatglm2": ">=4.42.0",
    "qwen": ">=4.54.0,!=5.0.*",  # 5.0.0 hands tuple-era models their tuples
    "merged": ">=4.54.0,!=5.0.*",  # 5.0.0 hands tuple-era models their tuples
    "stacked": ">=4.54.0,!=5.0.*",  # 5.0.0 hands tuple-era models their tuples
    "bloom": ">=4.54.0,!=5.0.*",  # 5.0.0 hands tuple-era models their tuples
}
# Tuple-era families whose past is not [batch, heads, seq, dim] (Qwen-1 [b, s, h, d], merged heads, a stacked
# key/value tensor, Bloom's [b * h, dim, seq]), written on Qwen-1's structure.
TUPLE_LAYOUT_FAMILIES = ("qwen", "merged", "stacked", "bloom")
# Every patch these models rely on (legacy-cache: their 4.40-style prepare_inputs_for_generation).
REMOTE_PATCHES = (
    "legacy-cache", "remote-code-cache-api", "remote-code-attn-mask-utils", "remote-code-removed-names",
    "remote-code-rope-scaling", "remote-code-model-methods", "remote-code-extract-past",
    "remote-code-config-defaults", "remote-code-config-generation-defaults", "remote-code-num-hidden-layers", "remote-code-update-kwargs",
    "remote-code-mask-warning", "remote-code-reorder-cache", "remote-code-tokenizer-pad",
    "remote-code-logits-warper", "decoding-unprepared-config", "remote-code-tied-weights",
    "remote-code-init-buffers", "remote-code-init-weights", "remote-code-generation-mixin",
    "remote-code-post-init", "remote-code-tokenizer-special-tokens", "remote-code-attention-mask",
    "remote-code-checkpoint-conversion",
)


@pytest.fixture(scope="module", autouse=True)
def decided():
    from hf_genfix.doctor import import_targets

    import_targets()  # every patch decided before the first remote class is created


@pytest.mark.parametrize("family", FAMILIES)
def test_family_generates_like_the_reference_with_hf_genfix(family, tmp_path):
    from hf_genfix.oracles.legacy_models import check_family

    figures = check_family(family, tmp_path)
    assert figures["forwards"] == 4  # prefill + 3 decode steps, one token each


@pytest.mark.parametrize("family", FAMILIES)
def test_without_hf_genfix_the_family_fails_exactly_where_measured(family, tmp_path):
    import hf_genfix
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.legacy_models import check_family

    with hf_genfix.disabled(*REMOTE_PATCHES):
        if in_range(FAILS_WITHOUT[family], transformers_version()):
            with pytest.raises(DefectObserved):
                check_family(family, tmp_path / "off")
            return
        without = check_family(family, tmp_path / "off")
    # Differential: where upstream runs the model, hf_genfix gives the same tokens.
    assert check_family(family, tmp_path / "on")["sequences"] == without["sequences"]


@pytest.mark.parametrize("family", FAMILIES)
def test_beam_search_equals_beam_search_without_cache(family, tmp_path):
    """Every family's own tuple-era _reorder_cache (4.54+ calls it with the DynamicCache)."""
    import hf_genfix
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.legacy_models import check_family_beam

    check_family_beam(family)
    # The phi3, deepseek and minicpm families fail without it on every affected release measured (internlm2 and
    # chatglm3 from 5.x on): the patch is what makes the difference, not the other remote-code patches.
    if family in ("phi3", "deepseek", "minicpm") and in_range(">=4.54.0", transformers_version()):
        with hf_genfix.disabled("remote-code-reorder-cache"):
            with pytest.raises(DefectObserved):
                check_family_beam(family)


@pytest.mark.parametrize("family", FAMILIES)
def test_an_unpadded_batch_generates_like_the_reference(family, tmp_path):
    """An all-ones mask, which 5.18+ generate() drops: the deepseek family's attention asserts it has a mask, as
    the real DeepSeek-V2 file's does."""
    import hf_genfix
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.legacy_models import EQUAL_ROWS, check_family

    on = check_family(family, tmp_path / "on", rows=EQUAL_ROWS)
    with hf_genfix.disabled("remote-code-attention-mask"):
        if family == "deepseek" and in_range(">=5.18.0", transformers_version()):
            with pytest.raises(DefectObserved, match="AssertionError"):
                check_family(family, tmp_path / "off", rows=EQUAL_ROWS)
            return
        off = check_family(family, tmp_path / "off", rows=EQUAL_ROWS)
    assert on["sequences"] == off["sequences"]


# A second load of the same repo in the process: 5.5+ take the class registered by the first, without
# GenerationMixin (measured 4.46.3 .. 5.24.0). These four fail on every release of the range; phi3 and deepseek
# escape it on some (5.24.0), not on others (5.18.0).
SECOND_LOAD_FAILS = {"minicpm", "internlm2", "chatglm3", "chatglm2"}


@pytest.mark.parametrize("family", FAMILIES)
def test_a_second_load_generates_like_the_reference(family, tmp_path):
    import hf_genfix
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.legacy_models import check_family

    on = check_family(family, tmp_path / "on", loads=2)
    with hf_genfix.disabled("remote-code-generation-mixin"):
        if in_range(">=5.5.0", transformers_version()):
            if family in SECOND_LOAD_FAILS:
                with pytest.raises(DefectObserved):
                    check_family(family, tmp_path / "off", loads=2)
            return
        off = check_family(family, tmp_path / "off", loads=2)
    assert on["sequences"] == off["sequences"]


# ChatGLM's tokenizer and its own sampling loop (stream_generate, behind stream_chat): the releases where each
# fails without the patch named (measured 4.40.2 .. 5.24.0; docs/remote-code.md).
CHATGLM = ("chatglm3", "chatglm2")
TOKENIZER_FAILS = {"remote-code-tokenizer-pad": ">=4.45.0"}
STREAM_FAILS = {
    "remote-code-logits-warper": ">=4.42.0,<4.45.0",
    "decoding-unprepared-config": ">=4.43.0",
    "remote-code-model-methods": ">=4.45.0",
}


@pytest.mark.parametrize("family", CHATGLM)
def test_chatglm_tokenizer_batch_generates_like_the_reference(family):
    """The remote tokenizer's left-padded batch (its own position ids included) encodes and generates like each
    row alone; without hf_genfix it fails exactly where measured, and elsewhere gives the same tokens."""
    import hf_genfix
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.legacy_models import check_family_tokenizer

    on = check_family_tokenizer(family)
    assert [len(r) for r in on["rows"]] == [10, 19]
    for patch, affected in TOKENIZER_FAILS.items():
        with hf_genfix.disabled(patch):
            if in_range(affected, transformers_version()):
                with pytest.raises(DefectObserved, match="padding_side"):
                    check_family_tokenizer(family)
    with hf_genfix.disabled(*REMOTE_PATCHES, *TOKENIZER_FAILS):
        if not in_range(FAILS_WITHOUT[family], transformers_version()):
            assert check_family_tokenizer(family) == on


@pytest.mark.parametrize("family", CHATGLM)
def test_chatglm_stream_generate_decodes_like_the_reference(family):
    import hf_genfix
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.legacy_models import check_family_stream

    on = check_family_stream(family)
    for patch, affected in STREAM_FAILS.items():
        if in_range(affected, transformers_version()):
            with hf_genfix.disabled(patch), pytest.raises(DefectObserved):
                check_family_stream(family)
    with hf_genfix.disabled(*REMOTE_PATCHES, *STREAM_FAILS):
        if not in_range(FAILS_WITHOUT[family], transformers_version()):
            assert check_family_stream(family) == on


def test_a_remote_tokenizer_without_special_tokens_encodes_its_own_tokens():
    """Qwen-1's shape: no build_inputs_with_special_tokens override. 5.0 - 5.1 give it [CLS] ... [SEP] it does not
    have (None ids, ValueError on every call)."""
    import hf_genfix
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.legacy_models import check_plain_remote_tokenizer

    on = check_plain_remote_tokenizer()
    with hf_genfix.disabled("remote-code-tokenizer-special-tokens"):
        if in_range(">=5.0.0,<5.2.0", transformers_version()):
            with pytest.raises(DefectObserved, match="None"):
                check_plain_remote_tokenizer()
            return
        assert check_plain_remote_tokenizer() == on


def test_special_tokens_pattern_is_left_to_any_transformers_class_in_the_mro():
    """Only classes written directly on the slow base get 5.2's default; a subclass of a transformers tokenizer
    keeps what that class chose."""
    from hf_genfix import catalog
    written_for_4x = catalog.fix('remote-code-tokenizer-special-tokens').written_for_4x

    class Base: ...
    class Builtin(Base): ...
    remote_direct = type("Direct", (Base,), {"__module__": "transformers_modules.repo.tokenization_x"})
    remote_on_builtin = type("OnBuiltin", (Builtin,), {"__module__": "transformers_modules.repo.tokenization_x"})
    assert written_for_4x(remote_direct, Base)
    assert not written_for_4x(remote_on_builtin, Base)
    assert not written_for_4x(Builtin, Base)


def test_chatglm_tokenizer_asked_for_the_right_side_fails_as_its_authors_meant(tmp_path):
    """padding_side="right" reaches the old _pad as the attribute it reads (ChatGLM's asserts left), for that
    call only."""
    from transformers import AutoTokenizer

    from hf_genfix.oracles.legacy_models import write_family

    tok = AutoTokenizer.from_pretrained(str(write_family("chatglm3", tmp_path / f"tok_{tmp_path.name}")),
                                        trust_remote_code=True)
    left = tok(["hi", "hello"], padding=True, padding_side="left")
    assert left["input_ids"][0][:3] == [0, 0, 0] and tok.padding_side == "left"
    from hf_genfix._registry import in_range, transformers_version

    if in_range(">=4.45.0", transformers_version()):  # before 4.45 the argument is not recognized (ignored)
        with pytest.raises(AssertionError):
            tok(["hi", "hello"], padding=True, padding_side="right")
    assert tok.padding_side == "left"


def test_tied_embeddings_of_the_list_form_tie_and_survive_save_and_reload(tmp_path):
    """MiniCPM-style: _tied_weights_keys = ["lm_head.weight"] with tie_word_embeddings (5.x reads a mapping)."""
    import torch

    import hf_genfix
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.legacy_models import check_family_tied, load_family, write_family

    check_family_tied("minicpm")
    if in_range(">=5.0.0", transformers_version()):
        with hf_genfix.disabled("remote-code-tied-weights"), pytest.raises(DefectObserved, match="keys"):
            check_family_tied("minicpm")
    model = load_family(write_family("minicpm", tmp_path / f"minicpm_{tmp_path.name}"))
    model.save_pretrained(tmp_path / "saved")
    state = model.state_dict()
    again = load_family(tmp_path / f"minicpm_{tmp_path.name}", seed=1)
    again.load_state_dict(state)
    assert again.lm_head.weight is again.model.embed_tokens.weight
    assert torch.equal(again.lm_head.weight, model.lm_head.weight)


@pytest.mark.parametrize("family", ["deepseek", "minicpm"])
def test_from_pretrained_keeps_the_buffers_init_computes(family):
    """Rotary inv_freq (persistent=False, computed in __init__) after save_pretrained + from_pretrained: 5.x empties
    it (on 5.x the loaded weights are re-initialised too: remote-code-init-weights, checked apart)."""
    import hf_genfix
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.legacy_models import check_family_reload_buffers

    from hf_genfix.oracles import ProbeSkipped

    try:
        assert check_family_reload_buffers(family)["buffers"] == 2
    except ProbeSkipped as exc:  # 4.51.0: from_pretrained is broken for every model
        pytest.skip(str(exc))
    if in_range(">=5.0.0", transformers_version()):
        with hf_genfix.disabled("remote-code-init-buffers"), pytest.raises(DefectObserved, match="inv_freq"):
            check_family_reload_buffers(family)


@pytest.mark.parametrize("family", FAMILIES)
def test_from_pretrained_gives_the_saved_model(family):
    """A Hub-style repo (code and weights) loaded with from_pretrained holds exactly the tensors that were saved and
    answers as the saved model. Without remote-code-init-weights, 5.0 - 5.12 (not 5.2) re-initialise the loaded
    weights, and every 5.x release those a Qwen-1-style _init_weights reaches in a child; without remote-code-post-init
    the ChatGLM families (no post_init() in their __init__) do not load on 5.x."""
    import hf_genfix
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.oracles import DefectObserved, ProbeSkipped
    from hf_genfix.oracles.legacy_models import check_family_reload

    try:
        check_family_reload(family)
    except ProbeSkipped as exc:  # 4.51.0: from_pretrained is broken for every model
        pytest.skip(str(exc))
    # Only the phi3 and deepseek families meet it on every release of the range (minicpm and internlm2 escape it
    # on 5.12.1, and so do the ChatGLM families).
    if family in ("phi3", "deepseek") and in_range(">=5.0.0,<5.13.0,!=5.2.*", transformers_version()):
        with hf_genfix.disabled("remote-code-init-weights"), pytest.raises(DefectObserved, match="loaded back"):
            check_family_reload(family)
    # Qwen-1's _init_weights re-draws every "c_proj.weight" below the module it is given; its attention module
    # owns a non-persistent buffer, so 5.13's rule does not skip it: every 5.x release, upstream too.
    if family in TUPLE_LAYOUT_FAMILIES and in_range(">=5.0.0", transformers_version()):
        with hf_genfix.disabled("remote-code-init-weights"), pytest.raises(DefectObserved, match="c_proj.weight"):
            check_family_reload(family)
    if family in CHATGLM and in_range(">=5.0.0", transformers_version()):
        with hf_genfix.disabled("remote-code-post-init"), pytest.raises(DefectObserved, match="all_tied_weights"):
            check_family_reload(family)


def test_a_remote_moe_of_a_type_transformers_also_has_loads_its_experts():
    """DeepSeek-V2's remote layout (one module per expert, model_type deepseek_v2): 5.0 - 5.2 apply the built-in
    class's expert fusion to it and leave its experts random."""
    import hf_genfix
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.oracles import DefectObserved, ProbeSkipped
    from hf_genfix.oracles.legacy_models import check_remote_moe_reload

    try:
        assert check_remote_moe_reload()["max_logit_diff"] <= 1e-4
    except ProbeSkipped as exc:  # 4.51.0: from_pretrained is broken for every model
        pytest.skip(str(exc))
    with hf_genfix.disabled("remote-code-checkpoint-conversion"):
        if in_range(">=5.0.0,<5.3.0", transformers_version()):
            with pytest.raises(DefectObserved, match="loaded back"):
                check_remote_moe_reload()
        else:
            check_remote_moe_reload()


MODERN_CONFIG = """
from transformers import LlamaConfig


class ModernConfig(LlamaConfig):
    model_type = "modern"
"""

MODERN_MODELING = """
from transformers import LlamaForCausalLM
from transformers.cache_utils import Cache

from .configuration_modern import ModernConfig


class ModernForCausalLM(LlamaForCausalLM):
    config_class = ModernConfig

    def forward(self, input_ids=None, **kwargs):
        cache = kwargs.get("past_key_values", kwargs.get("cache"))
        self.cache_types = getattr(self, "cache_types", []) + [type(cache).__name__ if isinstance(cache, Cache) else None]
        return super().forward(input_ids=input_ids, **kwargs)
"""


def test_remote_code_written_for_this_release_is_untouched(tmp_path):
    """A remote model that uses only the installed release's API generates bit-identically with and without
    hf_genfix, and its forward receives the real cache object."""
    import json

    import torch

    import hf_genfix
    from hf_genfix.oracles.decode import DEFAULT_ROWS
    from hf_genfix.oracles.generation import generate_steps, left_pad
    from hf_genfix.oracles.legacy import load_remote_model
    from hf_genfix.oracles.tiny import tiny_config

    (tmp_path / "configuration_modern.py").write_text(MODERN_CONFIG)
    (tmp_path / "modeling_modern.py").write_text(MODERN_MODELING)
    config = {k: v for k, v in tiny_config("llama").to_dict().items() if not k.startswith("_")}
    config.update(model_type="modern", architectures=["ModernForCausalLM"],
                  auto_map={"AutoConfig": "configuration_modern.ModernConfig",
                            "AutoModelForCausalLM": "modeling_modern.ModernForCausalLM"})
    (tmp_path / "config.json").write_text(json.dumps(config, default=str))
    model = load_remote_model(tmp_path)
    seen = []
    model.register_forward_pre_hook(
        lambda m, a, k: seen.append(type(k.get("past_key_values", k.get("cache")))), with_kwargs=True)
    ids, mask = left_pad(DEFAULT_ROWS)
    on = generate_steps(model, ids, mask, max_new_tokens=4, pad_token_id=0)
    with hf_genfix.disabled():
        off = generate_steps(model, ids, mask, max_new_tokens=4, pad_token_id=0)
    assert torch.equal(on.sequences, off.sequences)
    assert all(torch.equal(a, b) for a, b in zip(on.step_logits, off.step_logits))
    assert all("LegacyCacheView" not in t.__name__ for t in seen), seen


def test_remote_patches_exist():
    from hf_genfix._manifest import load_dir

    ids = {m.id for m in load_dir()}
    assert set(REMOTE_PATCHES) <= ids


@pytest.mark.parametrize("family", FAMILIES)
def test_a_users_own_forward_calls_equal_the_reference(family, tmp_path):
    """No generate(): ``model(ids, use_cache=True)``, then one more token with the ``past_key_values`` it returned,
    as a user's own decode loop does. On 4.54 - 4.57 the cache-class families called ``get_usable_length`` on the
    cache ``from_legacy_cache(None)`` built (AttributeError with and without hf_genfix before)."""
    import torch

    from hf_genfix.oracles.legacy_models import _family_repo, _loaded, rows_for
    from hf_genfix.oracles.reference import assert_close, reference_logits

    with _family_repo(family, tmp_path) as repo:
        model = _loaded(family, repo)
        row = [t for t in rows_for(family)[0] if t != getattr(model.config, "pad_token_id", None)]
        with torch.no_grad():
            first = model(input_ids=torch.tensor([row[:-1]]), use_cache=True)
            assert_close(first.logits[0], reference_logits(model, row[:-1]), f"{family}: model(ids)")
            second = model(input_ids=torch.tensor([row[-1:]]), past_key_values=first.past_key_values,
                           attention_mask=torch.ones(1, len(row), dtype=torch.long),
                           position_ids=torch.tensor([[len(row) - 1]]), use_cache=True)
        assert_close(second.logits[0, -1], reference_logits(model, row)[-1], f"{family}: the next token")
