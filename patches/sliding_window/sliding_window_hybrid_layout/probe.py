"""The probe of ``sliding-window-hybrid-layout`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps
    from hf_genfix.oracles.sweep import Subject

    subject = Subject("qwen3")  # the sweep's Qwen-3: window 8, layer 0 full (max_window_layers=1), layer 1 sliding
    rows = subject.rows(10, 10, seed=14)
    import torch

    ids = torch.tensor(rows, device=subject.model.device)
    try:
        run = generate_steps(subject.model, ids, torch.ones_like(ids), max_new_tokens=6,
                             cache_implementation="hybrid", pad_token_id=0, eos_token_id=None)
    except IndexError as exc:  # 4.51: the same cache raises (loud), no silent defect to observe
        raise ProbeSkipped(f"upstream raises on this call here: IndexError: {exc}") from exc
    return check_rows_against_reference(subject.model, rows, run, "Qwen-3, cache_implementation='hybrid'",
                                        eos_token_id=[])
