"""pad-token and padding-side on local repos laid out like the real ones (oracles.tokenizers).

The expectations are the 4.x behaviour (PADDING_SIDE_4X, measured on 4.40-4.57) and "padding a batch works
without changing the vocabulary"; explicit choices (repo config, caller) are never overridden.
"""

from __future__ import annotations

import logging

import pytest
import torch
import transformers
from packaging.version import Version

import hf_genfix
from padding_models import model_of, patches_decided  # noqa: F401 (autouse fixture)
from hf_genfix.oracles import check_rows_against_reference, generate_steps
from hf_genfix.oracles.padding import PADDING_SIDE_4X, check_can_pad
from hf_genfix.oracles.tokenizers import LAYOUTS, load_tokenizer, special_ids

VERSION = Version(Version(transformers.__version__).base_version)
NO_PAD = ["llama3", "llama2", "mistral", "gpt2"]


def _state(pid: str) -> str:
    return next(s for s in hf_genfix.status() if s.id == pid).state


# -- pad-token -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", NO_PAD)
def test_decoder_tokenizer_without_pad_gets_eos_and_keeps_its_vocabulary(layout):
    with hf_genfix.disabled("pad-token"):
        plain = load_tokenizer(layout)
    assert plain.pad_token is None
    tok = load_tokenizer(layout)
    assert tok.pad_token == tok.eos_token and tok.pad_token_id == tok.eos_token_id
    assert len(tok) == len(plain) and tok.get_vocab() == plain.get_vocab()
    check_can_pad(tok, layout)
    batch = tok(["hello world, how are you", "the fox"], padding=True)
    short = batch["input_ids"][1]
    fill = [i for i, m in zip(short, batch["attention_mask"][1]) if m == 0]
    assert fill and set(fill) == {tok.eos_token_id}


@pytest.mark.parametrize("layout", NO_PAD)
def test_without_the_patch_padding_raises(layout):
    with hf_genfix.disabled("pad-token"):
        tok = load_tokenizer(layout)
        with pytest.raises(ValueError, match="padding token"):
            tok(["hello world", "the fox"], padding=True)


@pytest.mark.parametrize("layout", ["qwen2", "gemma"])
def test_a_tokenizer_with_a_pad_token_keeps_it(layout):
    tok = load_tokenizer(layout)
    assert tok.pad_token == LAYOUTS[layout].pad


def test_caller_passing_pad_token_is_respected():
    assert load_tokenizer("llama3", pad_token=None).pad_token is None


@pytest.mark.parametrize("config", [
    {"model_type": "bert", "architectures": ["BertForMaskedLM"]},  # not a decoder
    {"config.json": None},  # no model config: unknown
], ids=["encoder", "no-config"])
def test_only_decoder_only_repos_are_touched(config):
    assert load_tokenizer("llama3", model_config=config).pad_token is None


def test_model_type_decides_when_the_repo_lists_no_architectures():
    tok = load_tokenizer("llama3", model_config={"architectures": None})
    assert tok.pad_token == tok.eos_token


def test_no_eos_either_leaves_it_and_says_so(caplog):
    # WARNING the first time per repo in a process, DEBUG after (another test may have loaded it first).
    with caplog.at_level(logging.DEBUG, logger="hf_genfix"):
        tok = load_tokenizer("llama3", tokenizer_config={"eos_token": None})
    assert tok.pad_token is None and tok.eos_token is None
    assert any("neither a pad nor an eos token" in r.getMessage() for r in caplog.records)
    with pytest.raises(ValueError, match="padding token"):
        tok(["hello world", "the fox"], padding=True)


def test_the_assignment_is_logged_once(caplog):
    with caplog.at_level(logging.DEBUG, logger="hf_genfix"):
        load_tokenizer("llama3")
        load_tokenizer("gpt2")
    said = [r for r in caplog.records if "has no pad token; using its eos token" in r.getMessage()]
    assert len(said) == 2 and sum(r.levelno == logging.WARNING for r in said) <= 1


def test_seed_scenario_end_to_end():
    """Seed 001: a Llama-3-style tokenizer, tok(prompts, padding=True), model.generate(**batch), nothing else."""
    ids = special_ids("llama3")
    model = model_of("llama", **ids)
    tok = load_tokenizer("llama3")
    prompts = ["translate: good morning", "write a poem", "summarise: the weather is nice for a walk"]
    batch = tok(prompts, padding=True, return_tensors="pt")
    rows = [tok(p)["input_ids"] for p in prompts]
    run = generate_steps(model, batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=4)
    check_rows_against_reference(model, rows, run, "seed 001 batch", eos_token_id=ids["eos_token_id"])


# -- padding-side ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_padding_side_is_the_4x_default(layout):
    assert load_tokenizer(layout).padding_side == PADDING_SIDE_4X[layout]


def test_repos_naming_the_slow_class_get_it_too():
    assert load_tokenizer("llama2", tokenizer_config={"tokenizer_class": "LlamaTokenizer"}).padding_side == "left"
    assert load_tokenizer("mistral", tokenizer_config={"tokenizer_class": "LlamaTokenizer"}).padding_side == "left"


@pytest.mark.parametrize("layout", ["llama2", "mistral", "gemma"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_a_side_in_the_repo_config_is_kept(layout, side):
    assert load_tokenizer(layout, padding_side_in_config=side).padding_side == side


@pytest.mark.parametrize("layout", ["llama2", "mistral", "llama3"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_a_side_the_caller_passes_is_kept(layout, side):
    assert load_tokenizer(layout, padding_side=side).padding_side == side


def test_unpatched_sides_are_the_measured_regression():
    """The evidence (run): Llama-2-style 'right' on 5.0-5.2, Mistral-style 'right' on every 5.x but 5.6 (whose
    AutoTokenizer trusted the class a repo names); 'left' on 4.x."""
    with hf_genfix.disabled("padding-side"):
        llama2, mistral = load_tokenizer("llama2").padding_side, load_tokenizer("mistral").padding_side
    affected = VERSION >= Version("5.0.0") and not Version("5.6.0") <= VERSION < Version("5.7.0")
    assert llama2 == ("right" if Version("5.0.0") <= VERSION < Version("5.3.0") else "left")
    assert mistral == ("right" if affected else "left")
    assert _state("padding-side") == ("applied" if affected else "not-needed")


# -- the local layouts themselves ------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_local_layouts_load_offline_and_fit_the_tiny_models(layout):
    tok = load_tokenizer(layout)
    text = "hello world, the fox"
    ids = tok(text)["input_ids"]
    assert max(ids) < 128 and tok.decode(ids, skip_special_tokens=True) == text
    expected = {k: v for k, v in special_ids(layout).items() if k != "pad_token_id"}
    assert {"bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id} == expected
