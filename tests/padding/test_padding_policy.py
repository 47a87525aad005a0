"""hf_genfix.BatchPaddingPolicy: replies equal each prompt generated alone, with or without the patches.

Oracle: the greedy reply of each prompt generated alone (unpadded, batch of one), cut at eos.
"""

from __future__ import annotations

import pytest
import torch

import hf_genfix
from padding_models import model_of, patches_decided  # noqa: F401 (autouse fixture)
from hf_genfix.oracles.tokenizers import load_tokenizer, special_ids

PROMPTS = ["translate: good morning", "write a poem", "summarise: the weather is nice for a walk", "hello"]
NEW = 6


def _alone(model, tok, prompts, eos):
    replies = []
    for p in prompts:
        ids = torch.tensor([tok(p)["input_ids"]])
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, do_sample=False,
                                 pad_token_id=eos, eos_token_id=eos)
        new = out[0, ids.shape[1]:].tolist()
        replies.append(new[: new.index(eos) + 1] if eos in new else new)
    return replies


@pytest.mark.parametrize("layout", ["llama3", "llama2", "gpt2", "qwen2"])
@pytest.mark.parametrize("patches", ["on", "off"])
def test_replies_equal_each_prompt_alone(layout, patches):
    from hf_genfix import BatchPaddingPolicy

    ids = special_ids(layout)
    arch = {"llama3": "llama", "llama2": "llama", "gpt2": "gpt2", "qwen2": "qwen2"}[layout]
    model = model_of(arch, **ids)
    eos = ids["eos_token_id"]
    with hf_genfix.disabled() if patches == "off" else _nothing():
        tok = load_tokenizer(layout)
        side, pad = tok.padding_side, tok.pad_token
        policy = BatchPaddingPolicy(tok)
        batch = policy.prepare(PROMPTS)
        with torch.no_grad():
            out = model.generate(**batch.inputs, **batch.generate_kwargs, max_new_tokens=NEW, do_sample=False)
    expected = _alone(model, tok, PROMPTS, eos)
    assert batch.reply_ids(out) == expected
    assert batch.decode(out) == [tok.decode(r, skip_special_tokens=True) for r in expected]
    assert (tok.padding_side, tok.pad_token) == (side, pad)  # the policy never changes the tokenizer


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_replies_start_at_the_padded_width_not_at_the_mask_sum():
    """Seed 001's layer 2 cut each reply at attention_mask.sum(): under left padding that keeps prompt tokens."""
    from hf_genfix import BatchPaddingPolicy

    ids = special_ids("llama3")
    model = model_of("llama", **ids)
    tok = load_tokenizer("llama3")
    batch = BatchPaddingPolicy(tok).prepare(PROMPTS)
    with torch.no_grad():
        out = model.generate(**batch.inputs, **batch.generate_kwargs, max_new_tokens=NEW, do_sample=False)
    expected = _alone(model, tok, PROMPTS, ids["eos_token_id"])
    assert batch.reply_ids(out) == expected
    seed_cut = [out[i, int(n):].tolist() for i, n in enumerate(batch.inputs["attention_mask"].sum(1))]
    shorter = [i for i, n in enumerate(batch.inputs["attention_mask"].sum(1)) if n < batch.prompt_width]
    assert shorter and all(seed_cut[i][: len(expected[i])] != expected[i] for i in shorter)


def test_one_call_generate_and_token_id_prompts():
    from hf_genfix import BatchPaddingPolicy

    ids = special_ids("llama2")
    model = model_of("llama", **ids)
    tok = load_tokenizer("llama2")
    policy = BatchPaddingPolicy(tok)
    texts = policy.generate(model, PROMPTS, max_new_tokens=NEW, do_sample=False)
    as_ids = policy.prepare([tok(p)["input_ids"] for p in PROMPTS])
    assert torch.equal(as_ids.inputs["input_ids"], policy.prepare(PROMPTS).inputs["input_ids"])
    expected = _alone(model, tok, PROMPTS, ids["eos_token_id"])
    assert texts == [tok.decode(r, skip_special_tokens=True) for r in expected]


def test_several_sequences_per_prompt():
    from hf_genfix import BatchPaddingPolicy

    ids = special_ids("gpt2")
    model = model_of("gpt2", **ids)
    with hf_genfix.disabled("pad-token"):
        tok = load_tokenizer("gpt2")
    batch = BatchPaddingPolicy(tok).prepare(PROMPTS[:2])
    torch.manual_seed(0)
    with torch.no_grad():
        out = model.generate(**batch.inputs, **batch.generate_kwargs, max_new_tokens=NEW, do_sample=True,
                             num_return_sequences=3)
    replies = batch.reply_ids(out)
    assert len(replies) == 6
    assert all(torch.equal(out[i, : batch.prompt_width], batch.inputs["input_ids"][i // 3]) for i in range(6))


def test_refusals_and_a_clear_error_without_pad_or_eos():
    from hf_genfix import BatchPaddingPolicy

    tok = load_tokenizer("llama3", tokenizer_config={"eos_token": None})
    with pytest.raises(ValueError, match="neither a pad nor an eos token"):
        BatchPaddingPolicy(tok)
    policy = BatchPaddingPolicy(tok, pad_token_id=0)
    assert policy.prepare(["a b", "the fox"]).inputs["input_ids"].shape[0] == 2
    with pytest.raises(TypeError):
        policy.prepare(["a"], padding=True)
    with pytest.raises(TypeError):
        policy.prepare(["a", [1, 2]])


def test_a_negative_pad_id_means_no_pad_token():
    """sentencepiece's -1 ("no pad"), which 4.x MistralCommonTokenizer gives for a v3 .model: pad with eos."""
    from types import SimpleNamespace

    from hf_genfix import BatchPaddingPolicy

    tok = SimpleNamespace(pad_token_id=-1, eos_token_id=2)
    batch = BatchPaddingPolicy(tok).prepare([[5, 6, 7], [8]])
    assert batch.generate_kwargs["pad_token_id"] == 2
    assert batch.inputs["input_ids"].tolist() == [[5, 6, 7], [2, 2, 8]]
