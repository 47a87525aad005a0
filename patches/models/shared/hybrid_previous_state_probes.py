"""The probe the three ``model-*-previous-state`` patches share (the defect: ``hybrid_previous_state.py``)."""

from __future__ import annotations


def probe_cached(model_type: str) -> dict:
    """A plain cached generate() of 4 tokens on the loud tiny ``model_type``, one row and a left-padded batch of
    three, every step against a no-cache forward of each unpadded row."""
    import torch

    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps, left_pad
    from hf_genfix.oracles.sweep.continuations import loud_model

    model = loud_model(model_type)
    gen = torch.Generator().manual_seed(29)
    figures = {}
    for name, widths in (("one row", (10,)), ("left-padded batch", (10, 6, 8))):
        rows = [torch.randint(3, 128, (n,), generator=gen).tolist() for n in widths]
        ids, mask = left_pad(rows, device=model.device)
        run = generate_steps(model, ids, mask, max_new_tokens=4, min_new_tokens=4, pad_token_id=0,
                             eos_token_id=None)
        figures[name] = check_rows_against_reference(model, rows, run, f"{model_type}: cached generate(), {name}",
                                                     eos_token_id=[])["max_logit_diff"]
    return figures
