"""The probe of ``model-recurrent-gemma-continuation`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

ROW = [17, 44, 91, 23, 5, 60, 12, 77, 30, 9]


def probe() -> dict:
    import copy

    import torch

    from hf_genfix.oracles.generation import (
        check_rows_against_reference,
        generate_steps,
        left_pad,
        reference_logits,
    )
    from hf_genfix.oracles.sweep.continuations import (
        loud_model,
        prefix_reuse,
        probe_second_turn,
        unless_upstream_fails,
    )

    model = loud_model("recurrent_gemma", num_hidden_layers=3)
    # The references come from a copy that no generate() has touched: before 5.4 the RG-LRU reads the state its
    # module kept from the last call even without a cache, and a batch of 3 left there makes the one-row reference
    # forward fail on the shapes (4.54-4.56; position 0 resets it, so the values would be right).
    pristine = copy.deepcopy(model)
    # A left-padded batch, plainly cached: its masks are sized by the cache's length (5.18-5.22: the empty first
    # layer's, and the pads are attended from the second step on; a continuation raises there).
    rows = [ROW, ROW[:6], ROW[2:]]
    ids, mask = left_pad(rows)
    # Before 5.4 upstream fails loudly (4.46-4.48 here: a keyword the forward lacks; from 4.49 the second turn's
    # cache_params are refused): skipped.
    run = unless_upstream_fails(generate_steps, model, ids, mask, max_new_tokens=4, min_new_tokens=4, pad_token_id=0,
                                eos_token_id=None)
    padded = check_rows_against_reference(model, rows, run, "left-padded batch, cached", eos_token_id=[],
                                          reference=lambda b, tokens: reference_logits(pristine, tokens))
    # A second turn from the returned cache, then a prefix cache reused through copy.deepcopy twice.
    turn = probe_second_turn("recurrent_gemma", num_hidden_layers=3)
    gen = torch.Generator().manual_seed(32)
    row = torch.randint(3, 128, (9,), generator=gen).tolist()
    reused = unless_upstream_fails(prefix_reuse, model, [row], [[40, 41, 42], [7, 8, 9, 10]])
    parts = (padded, turn, reused)
    return {"max_logit_diff": max(p["max_logit_diff"] for p in parts),
            "steps_compared": sum(p["steps_compared"] for p in parts)}
