"""Who set the pad token (issue 23): the user's own ``pad = eos`` is saved as upstream saves it; hf_genfix's
choice is not, also on copies and pickles; a tokenizer saved alone pads again after a reload in the process.

The baseline is the same steps with every patch off (``hf_genfix.disabled()``): upstream's files, compared byte
for byte. Each of these failed before the pad token's owner was recorded (the user's assignment was taken for
hf_genfix's choice, copies lost the mark, the reload of a tokenizer saved alone had no pad token).
"""

from __future__ import annotations

import copy
import pickle

import pytest

import hf_genfix
from padding_models import patches_decided  # noqa: F401 (autouse fixture)
from hf_genfix import catalog
from hf_genfix.oracles.saving import TEXTS, folder_files, folder_difference
from hf_genfix.oracles.tokenizers import layout_of, load_tokenizer

pad_assigned_by_hf_genfix = catalog.fix("pad-token").pad_assigned_by_hf_genfix


def _pad_eos(tok):
    tok.pad_token = tok.eos_token


def _pad_id(tok):
    tok.pad_token_id = tok.eos_token_id


def _add_special(tok):
    tok.add_special_tokens({"pad_token": tok.eos_token})


def _set_back(tok):
    tok.pad_token = tok.bos_token
    tok.pad_token = tok.eos_token


def _saved(folder, layout, step, move=lambda t: t, **kwargs):
    tok = move(load_tokenizer(layout, **kwargs))
    step(tok)
    if tok.pad_token is not None:  # upstream without a pad token raises here
        tok(TEXTS, padding=True)  # leaves its padding in a fast backend, which tokenizer.json records
    tok.save_pretrained(folder)
    return tok, folder_files(folder)


@pytest.mark.parametrize("layout", ["llama3", "llama2", "gpt2"])
@pytest.mark.parametrize("step", [_pad_eos, _pad_id, _add_special, _set_back],
                         ids=["pad_token", "pad_token_id", "add_special_tokens", "set-back-to-eos"])
def test_the_users_pad_eos_is_saved_as_upstream_saves_it(tmp_path, layout, step):
    with hf_genfix.disabled():
        _, upstream = _saved(tmp_path / "upstream", layout, step)
    tok, ours = _saved(tmp_path / "ours", layout, step)
    assert not pad_assigned_by_hf_genfix(tok)
    assert not folder_difference(upstream, ours), folder_difference(upstream, ours)
    assert b'"pad_token": "' + layout_of(layout).eos.encode() in ours["tokenizer_config.json"]


def test_a_pad_set_inside_disabled_or_at_load_is_the_users(tmp_path):
    # Inside disabled() the __setattr__ wrapper is off; the mark holds another string object than the one stored.
    tok = load_tokenizer("llama3")
    assert pad_assigned_by_hf_genfix(tok)
    with hf_genfix.disabled():
        tok.pad_token = tok.eos_token
    assert not pad_assigned_by_hf_genfix(tok)
    # from_pretrained(pad_token=...) is the user's choice: nothing chosen, saved as upstream saves it.
    eos = layout_of("llama3").eos
    with hf_genfix.disabled():
        _, upstream = _saved(tmp_path / "upstream", "llama3", lambda t: None, pad_token=eos)
    tok, ours = _saved(tmp_path / "ours", "llama3", lambda t: None, pad_token=eos)
    assert not pad_assigned_by_hf_genfix(tok) and ours == upstream


@pytest.mark.parametrize("move", [copy.deepcopy, copy.copy, lambda t: pickle.loads(pickle.dumps(t))],
                         ids=["deepcopy", "copy", "pickle"])
def test_copies_save_as_the_original_does(tmp_path, move):
    # hf_genfix's pad on the copy is not saved; the user's pad = eos on the copy is.
    for name, step in (("hf_genfix-pad", lambda t: None), ("user-pad", _pad_eos)):
        with hf_genfix.disabled():
            _, upstream = _saved(tmp_path / name / "upstream", "llama3", step, move)
        tok, ours = _saved(tmp_path / name / "ours", "llama3", step, move)
        assert tok.pad_token == tok.eos_token  # the copy pads as the original does
        assert not folder_difference(upstream, ours), (name, folder_difference(upstream, ours))


def test_the_collator_protection_travels_with_a_copy():
    tok = load_tokenizer("llama3")
    assert pad_assigned_by_hf_genfix(copy.deepcopy(tok))
    assert pad_assigned_by_hf_genfix(pickle.loads(pickle.dumps(tok)))


@pytest.mark.parametrize("layout", ["llama3", "llama2", "gpt2"])
def test_saved_alone_and_reloaded_pads_as_before(tmp_path, layout):
    from transformers import AutoTokenizer

    with hf_genfix.disabled():
        load_tokenizer(layout).save_pretrained(tmp_path / "upstream")
    tok = load_tokenizer(layout)
    before = tok(TEXTS, padding=True)["input_ids"]
    tok.save_pretrained(tmp_path / "ours")  # no config.json beside it
    assert folder_files(tmp_path / "ours") == folder_files(tmp_path / "upstream")
    reloaded = AutoTokenizer.from_pretrained(str(tmp_path / "ours"))
    assert reloaded.pad_token == tok.pad_token and pad_assigned_by_hf_genfix(reloaded)
    assert reloaded(TEXTS, padding=True)["input_ids"] == before
    # The folder overwritten by a tokenizer without hf_genfix's pad is not mistaken for the saved one.
    with hf_genfix.disabled():
        load_tokenizer(layout, model_max_length=77).save_pretrained(tmp_path / "ours")
    assert AutoTokenizer.from_pretrained(str(tmp_path / "ours")).pad_token is None
