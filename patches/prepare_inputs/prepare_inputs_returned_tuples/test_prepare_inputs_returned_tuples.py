"""``prepare-inputs-returned-tuples``: the checks every patch owes (hf_genfix.testing.patches.PatchTests), the
other models of the class, and the calls it must leave as upstream makes them."""

import pytest

from hf_genfix.testing.patches import PatchTests

PATCH = "prepare-inputs-returned-tuples"


class TestPatch(PatchTests):
    """``prepare-inputs-returned-tuples``: its probe proves it on this release; its plain program installs it."""


def _affected() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from hf_genfix import catalog
    from hf_genfix._registry import in_range, transformers_version

    if not in_range(catalog.manifest(PATCH).affected, transformers_version()):
        pytest.skip(f"{PATCH}: transformers {transformers_version()} is not affected")


def _bert_decoder(name: str):
    """A tiny decoder (``is_decoder=True``) of the BERT-style models in the class: RoCBert, XLM-RoBERTa-XL."""
    import torch
    import transformers

    model_cls, config_cls, extra = {
        "roc_bert": ("RoCBertForCausalLM", "RoCBertConfig", dict(pronunciation_vocab_size=16, shape_vocab_size=16)),
        "xlm_roberta_xl": ("XLMRobertaXLForCausalLM", "XLMRobertaXLConfig", {}),
    }[name]
    config = getattr(transformers, config_cls)(vocab_size=128, hidden_size=32, num_hidden_layers=2,
                                               num_attention_heads=4, intermediate_size=64, is_decoder=True,
                                               pad_token_id=0, **extra)
    torch.manual_seed(0)
    return getattr(transformers, model_cls)(config).eval()


# RoCBert's absolute positions ignore left padding on every release (a padded batch is 0.3 off upstream, with or
# without this patch, 4.53 and 4.56 alike): its loop is judged on rows of one length.
@pytest.mark.parametrize("name, rows", [
    ("roc_bert", ((5, 6, 7, 8, 9), (10, 11, 12, 13, 14))),
    ("xlm_roberta_xl", ((17, 44, 91, 23, 5), (60, 12, 77))),
])
def test_the_class_decodes_by_hand(name, rows):
    """Each model of the class whose loop the sweep does not build: the defect without the patch, right with it."""
    _affected()
    import hf_genfix
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.decode import check_manual_loop

    model = _bert_decoder(name)
    with hf_genfix.disabled(PATCH), pytest.raises(DefectObserved, match="get_seq_length"):
        check_manual_loop(model, rows=rows)
    assert check_manual_loop(model, rows=rows)["max_logit_diff"] < 1e-4


def test_only_the_class_is_wrapped():
    """The overrides that read get_seq_length in a module that returns tuples; not the generic method, not an
    override of a model that returns its Cache."""
    _affected()
    import transformers

    from hf_genfix._patcher import wrapped_by

    def wrapped(cls_name: str) -> bool:
        return wrapped_by(vars(getattr(transformers, cls_name))["prepare_inputs_for_generation"], PATCH)

    for name in ("CTRLLMHeadModel", "RoCBertForCausalLM", "XLMRobertaXLForCausalLM",
                 "MusicgenMelodyForConditionalGeneration"):
        assert wrapped(name), name
    from transformers.generation.utils import GenerationMixin

    assert not wrapped_by(vars(GenerationMixin)["prepare_inputs_for_generation"], PATCH)
    assert not wrapped("BloomForCausalLM")  # its own override, for a model that keeps Cache objects


def test_what_upstream_takes_is_left_alone():
    """Given None or a Cache, the call is upstream's (same inputs, nothing recorded as changed); given the tuple,
    forward gets the caller's own tuple object back, not the view."""
    _affected()
    import torch

    import hf_genfix
    from transformers import DynamicCache

    from hf_genfix.oracles.tiny import tiny_model

    model = tiny_model("ctrl")
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        out = model(ids, use_cache=True)
    assert type(out.past_key_values) is tuple  # the returned tuple this patch is about
    given = out.past_key_values
    longer = torch.cat([ids, torch.tensor([[9]])], dim=-1)
    for cache in (None, DynamicCache.from_legacy_cache(given)):
        with hf_genfix.recording() as seen:
            ours = model.prepare_inputs_for_generation(longer, past_key_values=cache)
        with hf_genfix.disabled(PATCH):
            theirs = model.prepare_inputs_for_generation(longer, past_key_values=cache)
        assert ours.keys() == theirs.keys()
        assert torch.equal(ours["input_ids"], theirs["input_ids"])
        assert ours["past_key_values"] is cache
        assert seen.counts.get(PATCH, (0, 0))[1] == 0
    with hf_genfix.recording() as seen:
        inputs = model.prepare_inputs_for_generation(longer, past_key_values=given)
    assert seen.counts[PATCH][1] == 1
    assert inputs["past_key_values"] is given
    assert inputs["input_ids"].tolist() == [[9]]
