"""padding-side after save_pretrained: a reload in the same process gives what the first load gave (issue 12),
and the saved files are upstream's (nothing written that the user did not ask for)."""

from __future__ import annotations

import pytest

import hf_genfix
from padding_models import patches_decided  # noqa: F401 (autouse fixture)
from hf_genfix.oracles.padding import PADDING_SIDE_4X
from hf_genfix.oracles.tokenizers import load_tokenizer

pytest.importorskip("transformers")


def _files(directory) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.mark.parametrize("layout", ["mistral", "llama2", "gemma", "llama3"])
def test_reload_after_save_gives_the_first_loads_side(tmp_path, layout):
    from transformers import AutoTokenizer

    first = load_tokenizer(layout)
    assert first.padding_side == PADDING_SIDE_4X[layout]
    first.save_pretrained(tmp_path / "saved")
    assert AutoTokenizer.from_pretrained(str(tmp_path / "saved")).padding_side == first.padding_side
    # And again from what the reload saves.
    AutoTokenizer.from_pretrained(str(tmp_path / "saved")).save_pretrained(tmp_path / "again")
    assert AutoTokenizer.from_pretrained(tmp_path / "again").padding_side == first.padding_side


def test_saved_files_are_upstreams(tmp_path):
    tokenizer = load_tokenizer("mistral")
    with hf_genfix.disabled("padding-side"):
        tokenizer.save_pretrained(tmp_path / "upstream")
    tokenizer.save_pretrained(tmp_path / "patched")
    assert _files(tmp_path / "patched") == _files(tmp_path / "upstream")


def test_explicit_choices_and_overwritten_directories_win(tmp_path):
    from transformers import AutoTokenizer

    load_tokenizer("mistral").save_pretrained(tmp_path)
    assert AutoTokenizer.from_pretrained(str(tmp_path), padding_side="right").padding_side == "right"
    # The directory is overwritten by a tokenizer this patch never corrected: its own side, as upstream gives.
    with hf_genfix.disabled("padding-side"):
        other = load_tokenizer("mistral", model_max_length=77)
        upstream_side = other.padding_side
        other.save_pretrained(tmp_path)
        upstream_reload = AutoTokenizer.from_pretrained(str(tmp_path)).padding_side
    assert AutoTokenizer.from_pretrained(str(tmp_path)).padding_side == upstream_reload == upstream_side
