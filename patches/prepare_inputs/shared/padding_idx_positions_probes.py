"""The probes of prepare-inputs-padding-idx-positions and -steps: a tiny RoBERTa decoder, left-padded, against a
no-cache forward of each unpadded row (the defect and the correction: ``padding_idx_positions.py``)."""

from __future__ import annotations

from typing import Any


def tiny_roberta_decoder(model_type: str = "roberta") -> Any:
    """A tiny RoBERTa-style decoder (``is_decoder=True``, pad token 1 = ``padding_idx``), every matrix redrawn at
    std 0.3 so that a position off by two moves the logits by units, not by rounding."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(model_type, vocab_size=64, hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=37, is_decoder=True,
                                  max_position_embeddings=64, pad_token_id=1, bos_token_id=0, eos_token_id=2)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() > 1:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    return model


def probe() -> dict:
    from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad

    model = tiny_roberta_decoder()
    rows = [[5, 6, 7, 8, 9], [10, 11, 12]]
    ids, mask = left_pad(rows, pad_id=1)
    # Token 1 is the pad (the oracle's forward would read it as padding): never generated; the logits compared are
    # the raw ones, so the suppression changes only which token is chosen.
    run = generate_steps(model, ids, mask, max_new_tokens=4, pad_token_id=1, suppress_tokens=[1])
    return check_rows_against_reference(model, rows, run, "RoBERTa decoder, left-padded generate()",
                                        check_tokens=False)


# For the two patches' tests: the class, one scenario run both ways, one plain generate() both ways.
ROBERTA_STYLE = ("roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "data2vec-text", "roberta-prelayernorm",
                 "xmod")


def scenario_both_ways(patch_id: str, subject: Any, name: str) -> tuple[float, float]:
    """The sweep scenario ``name`` on ``subject`` without and with the patch: each run's max |logit diff| against
    its oracle (a defect observed gives its figure, a pass its own)."""
    import hf_genfix
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.sweep import SCENARIOS

    def diff() -> float:
        try:
            return float(SCENARIOS[name](subject)["max_logit_diff"])
        except DefectObserved as exc:
            return float(exc.figures["max_logit_diff"])

    with hf_genfix.disabled(patch_id):
        without = diff()
    return without, diff()


def greedy(model: Any, **kwargs: Any) -> Any:
    """A left-padded pair (pad token 1), 3 greedy tokens, the raw logits kept."""
    import torch

    ids = torch.tensor([[1, 1, 5, 6, 7], [8, 9, 10, 11, 12]])
    with torch.no_grad():
        return model.generate(ids, attention_mask=(ids != 1).long(), max_new_tokens=3, do_sample=False,
                              pad_token_id=1, output_logits=True, return_dict_in_generate=True, **kwargs)


def same_run(a: Any, b: Any) -> bool:
    """Two ``greedy`` answers bitwise alike: the tokens and every step's logits."""
    import torch

    return torch.equal(a.sequences, b.sequences) and all(torch.equal(x, y) for x, y in zip(a.logits, b.logits))
