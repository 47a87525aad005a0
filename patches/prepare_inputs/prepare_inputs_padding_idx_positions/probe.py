"""The probe of ``prepare-inputs-padding-idx-positions`` (the defect, and how it is detected: ``fix.py``)."""

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
