"""pad-token's choice stays in the process: ``save_pretrained`` writes upstream's files (issue 10, item 2).

The baseline is the same tokenizer loaded and saved with ``pad-token`` switched off (upstream); the folders are
compared file by file, byte for byte. A padded call first, because it leaves its padding (pad id = eos) in the
fast backend, which ``tokenizer.json`` records. 4.x also writes ``special_tokens_map.json``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import hf_genfix
from padding_models import patches_decided  # noqa: F401 (autouse fixture)
from hf_genfix.oracles.tokenizers import load_tokenizer, tokenizer_repo

TEXTS = ["hello world, how are you today", "the fox"]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _upstream_save(folder: Path, layout: str = "llama3") -> dict[str, bytes]:
    with hf_genfix.disabled("pad-token"):
        tok = load_tokenizer(layout)
        assert tok.pad_token is None
        tok(TEXTS)
        tok.save_pretrained(folder)
    return _files(folder)


@pytest.mark.parametrize("layout", ["llama3", "llama2", "gpt2"])
def test_saved_files_are_upstreams(tmp_path, layout):
    upstream = _upstream_save(tmp_path / "upstream", layout)
    tok = load_tokenizer(layout)
    assert tok.pad_token == tok.eos_token  # hf_genfix's choice, in this process
    tok(TEXTS, padding=True)
    tok.save_pretrained(tmp_path / "genfix")
    saved = _files(tmp_path / "genfix")
    assert sorted(saved) == sorted(upstream)
    different = [name for name in saved if saved[name] != upstream[name]]
    assert not different, different
    assert tok.pad_token == tok.eos_token  # the caller's tokenizer keeps it
    tok(TEXTS, padding=True)


def test_without_the_wrapper_the_choice_would_be_saved(tmp_path):
    # The defect the save wrapper exists for: a test that could not fail would not show it.
    upstream = _upstream_save(tmp_path / "upstream")
    tok = load_tokenizer("llama3")
    tok(TEXTS, padding=True)
    from hf_genfix import catalog
    pad_token = catalog.fix('pad-token')

    pad_token.forget(tok)  # as if pad-token had not marked the pad as its own
    tok.save_pretrained(tmp_path / "marked-off")
    saved = _files(tmp_path / "marked-off")
    assert {"tokenizer.json", "tokenizer_config.json"} <= {n for n in saved if saved[n] != upstream.get(n)}


def test_a_pad_token_the_user_sets_is_saved(tmp_path):
    tok = load_tokenizer("llama3")
    tok.pad_token = "<|eot_id|>"
    tok.save_pretrained(tmp_path)
    reloaded = load_tokenizer_from(tmp_path)
    assert reloaded.pad_token == "<|eot_id|>"


def load_tokenizer_from(folder: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder))


def test_save_reload_collate_keeps_every_eos_label(tmp_path):
    from transformers import DataCollatorForLanguageModeling

    tok = load_tokenizer("llama3")
    tok(TEXTS, padding=True)
    tok.save_pretrained(tmp_path)
    # model.save_pretrained writes config.json beside it in a real checkpoint: pad-token reads it on reload.
    shutil.copy(tokenizer_repo("llama3") / "config.json", tmp_path)
    reloaded = load_tokenizer_from(tmp_path)
    assert reloaded.pad_token == reloaded.eos_token  # chosen again by pad-token, not read from the files
    eos = reloaded.eos_token_id
    rows = [reloaded(t)["input_ids"] + [eos] for t in TEXTS]
    batch = DataCollatorForLanguageModeling(tokenizer=reloaded, mlm=False)(
        [{"input_ids": r, "attention_mask": [1] * len(r)} for r in rows]
    )
    real = batch["attention_mask"].bool() & (batch["input_ids"] == eos)
    assert int(real.sum()) == len(rows)
    assert (batch["labels"][real] == eos).all(), batch["labels"]
