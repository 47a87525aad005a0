"""The probe of ``model-recurrent-gemma-continuation`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

ROW = [17, 44, 91, 23, 5, 60, 12, 77, 30, 9]


def probe() -> dict:
    import torch

    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps, left_pad
    from hf_genfix.oracles.sweep.continuations import loud_model, prefix_reuse, probe_second_turn

    model = loud_model("recurrent_gemma", num_hidden_layers=3)
    # A left-padded batch, plainly cached: its masks are sized by the cache's length (5.18-5.22: the empty first
    # layer's, and the pads are attended from the second step on; a continuation raises there).
    rows = [ROW, ROW[:6], ROW[2:]]
    ids, mask = left_pad(rows)
    run = generate_steps(model, ids, mask, max_new_tokens=4, min_new_tokens=4, pad_token_id=0, eos_token_id=None)
    padded = check_rows_against_reference(model, rows, run, "left-padded batch, cached", eos_token_id=[])
    # A second turn from the returned cache, then a prefix cache reused through copy.deepcopy twice.
    turn = probe_second_turn("recurrent_gemma", num_hidden_layers=3)
    gen = torch.Generator().manual_seed(32)
    row = torch.randint(3, 128, (9,), generator=gen).tolist()
    reused = prefix_reuse(model, [row], [[40, 41, 42], [7, 8, 9, 10]])
    parts = (padded, turn, reused)
    return {"max_logit_diff": max(p["max_logit_diff"] for p in parts),
            "steps_compared": sum(p["steps_compared"] for p in parts)}
