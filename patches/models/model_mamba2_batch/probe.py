"""The probe of ``model-mamba2-batch`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

ROWS = [[17, 44, 91, 23, 5, 60], [3, 9, 27, 81, 4, 16]]


def probe() -> dict:
    import torch

    from hf_genfix import catalog
    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps
    from hf_genfix.oracles.sweep.continuations import loud_model

    refusal = catalog.fix("model-mamba2-batch").Mamba2BatchUnsupported
    model = loud_model("mamba2", chunk_size=4)
    ids = torch.tensor(ROWS, device=model.device)
    try:
        run = generate_steps(model, ids, torch.ones_like(ids), max_new_tokens=4, min_new_tokens=4, pad_token_id=0,
                             eos_token_id=None)
    except refusal as exc:
        return {"refused": str(exc)[:60]}
    return check_rows_against_reference(model, ROWS, run, "mamba2: cached generate() of a batch of two rows",
                                        eos_token_id=[])
