"""The probe of ``model-xglm-positions`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    import torch

    from hf_genfix.oracles import DefectObserved, check_rows_against_reference, generate_steps, left_pad, tiny_model
    from hf_genfix.oracles.sliding import prompts

    model = tiny_model("xglm")
    rows = prompts(7, 7, seed=5)
    ids, mask = left_pad(rows)  # equal lengths: no padding
    positions = torch.arange(ids.shape[1], device=ids.device).expand_as(ids).clone()
    with torch.no_grad():
        model(input_ids=ids, attention_mask=mask, position_ids=positions)
    if not torch.equal(positions, torch.arange(ids.shape[1], device=ids.device).expand_as(ids)):
        shift = int((positions[0, 0]).item())
        raise DefectObserved(f"xglm: a forward given position_ids shifts the caller's tensor in place by {shift}")
    run = generate_steps(model, ids, mask, max_new_tokens=5, use_cache=False, pad_token_id=0, eos_token_id=None)
    return check_rows_against_reference(model, rows, run, "xglm, generate(use_cache=False), 2 rows of 7 tokens",
                                        eos_token_id=[])
