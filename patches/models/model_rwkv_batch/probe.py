"""The probe of ``model-rwkv-batch`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    import torch

    from hf_genfix.oracles import DefectObserved, check_rows_against_reference, generate_steps, left_pad, tiny_model
    from hf_genfix.oracles.sliding import prompts

    model = tiny_model("rwkv", rescale_every=0)
    rows = prompts(7, 7, seed=4)
    ids, _ = left_pad(rows)
    with torch.no_grad():
        state = model(ids, use_cache=True).state
        step = model(ids[:, -1:], state=state, use_cache=True).logits
    if step.shape[:2] != (2, 1):
        raise DefectObserved(f"rwkv, batch of 2: a one-token step returns logits of shape {tuple(step.shape)} "
                             f"(rows broadcast against each other), not (2, 1, vocab)")
    run = generate_steps(model, ids, None, max_new_tokens=6, pad_token_id=0, eos_token_id=None)
    return check_rows_against_reference(model, rows, run, "rwkv, 2 unpadded rows of 7 tokens, 6 greedy tokens",
                                        eos_token_id=[])
