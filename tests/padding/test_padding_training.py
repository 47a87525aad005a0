"""The evidence behind the training decisions of pad-token and padding-side (see their module docstrings).

- pad == eos in ``DataCollatorForLanguageModeling(mlm=False)`` masks every real eos label (upstream #23530);
  for tokenizers whose pad hf_genfix assigned, the labels are masked by the padding positions instead.
- Left and right padding give the same training loss per row as the unpadded row for the rotary families whose
  4.x side padding-side restores (llama, mistral, gemma); not for absolute positions (gpt2), which that patch
  never turns left.
"""

from __future__ import annotations

import pytest
import torch

import hf_genfix
from padding_models import model_of, patches_decided  # noqa: F401 (autouse fixture)
from hf_genfix.oracles import reference_logits
from hf_genfix.oracles.generation import left_pad, right_pad
from hf_genfix.oracles.padding import ragged_rows
from hf_genfix.oracles.tokenizers import load_tokenizer

TEXTS = ["hello world, how are you today", "the fox", "write a short poem about the sea"]


def _collate(tok, features, return_tensors="pt"):
    from transformers import DataCollatorForLanguageModeling

    return DataCollatorForLanguageModeling(tokenizer=tok, mlm=False, return_tensors=return_tensors)(features)


def _examples(tok, as_dicts=True):
    rows = [tok(t)["input_ids"] + [tok.eos_token_id] for t in TEXTS]
    return rows, ([{"input_ids": r, "attention_mask": [1] * len(r)} for r in rows] if as_dicts else rows)


def _expected_labels(tok, rows, width):
    out = []
    for r in rows:
        pad = [-100] * (width - len(r))
        out.append(pad + r if tok.padding_side == "left" else r + pad)
    return out


@pytest.mark.parametrize("as_dicts", [True, False], ids=["dicts", "lists"])
@pytest.mark.parametrize("return_tensors", ["pt", "np"])
@pytest.mark.parametrize("side", ["right", "left"])
def test_collator_keeps_eos_labels_for_a_pad_hf_genfix_assigned(as_dicts, return_tensors, side):
    tok = load_tokenizer("llama3", padding_side=side)
    assert tok.pad_token == tok.eos_token
    rows, features = _examples(tok, as_dicts)
    batch = _collate(tok, features, return_tensors)
    width = max(len(r) for r in rows)
    assert batch["labels"].tolist() == _expected_labels(tok, rows, width)


def test_pad_eos_set_by_hand_masks_every_eos_label():
    """The upstream behaviour hf_genfix leaves alone when the user chose pad = eos (transformers#23530)."""
    with hf_genfix.disabled("pad-token"):
        tok = load_tokenizer("llama3")
    tok.pad_token = tok.eos_token
    rows, features = _examples(tok)
    labels = _collate(tok, features)["labels"]
    ids = _collate(tok, features)["input_ids"]
    assert (labels[ids == tok.eos_token_id] == -100).all()
    assert labels.tolist() != _expected_labels(tok, rows, max(len(r) for r in rows))


def _row_losses(model, ids, mask):
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits.float()
    losses = []
    for b in range(ids.shape[0]):
        keep = mask[b].bool()
        row_logits, row_ids = logits[b][keep], ids[b][keep]
        losses.append(torch.nn.functional.cross_entropy(row_logits[:-1], row_ids[1:]).item())
    return losses


def _alone(model, rows):
    out = []
    for r in rows:
        logits = reference_logits(model, r)
        out.append(torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(r[1:])).item())
    return out


@pytest.mark.parametrize("arch", ["llama", "mistral", "gemma"])
def test_rotary_families_train_the_same_with_either_side(arch):
    model = model_of(arch)
    rows = ragged_rows([9, 4, 6, 2], seed=21)
    alone = _alone(model, rows)
    for pad in (left_pad, right_pad):
        assert _row_losses(model, *pad(rows)) == pytest.approx(alone, abs=1e-4), pad.__name__


def test_absolute_positions_need_right_padding_for_training():
    model = model_of("gpt2")
    rows = ragged_rows([9, 4, 6, 2], seed=21)
    alone = _alone(model, rows)
    assert _row_losses(model, *right_pad(rows)) == pytest.approx(alone, abs=1e-4)
    left = _row_losses(model, *left_pad(rows))
    assert max(abs(a - b) for a, b in zip(left[1:], alone[1:])) > 1e-3
