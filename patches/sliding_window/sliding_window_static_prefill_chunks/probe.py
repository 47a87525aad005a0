"""The probe of ``sliding-window-static-prefill-chunks`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    import torch

    from hf_genfix._patches.sliding_window.sliding_window_static_prefill_chunks.fix import (
        SlidingStaticPrefillChunksUnsupported,
    )
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps
    from hf_genfix.oracles.sweep import Subject

    subject = Subject("gemma2")  # the sweep's Gemma-2: window 8, its calibrated weights
    (row,) = subject.rows(19, seed=3)
    ids = torch.tensor([row], device=subject.model.device)
    try:
        run = generate_steps(subject.model, ids, torch.ones_like(ids), max_new_tokens=4, prefill_chunk_size=5,
                             cache_implementation="hybrid", pad_token_id=0, eos_token_id=None)
    except SlidingStaticPrefillChunksUnsupported as exc:
        return {"refused": str(exc)[:60]}
    except ValueError as exc:
        if "prefill_chunk_size" in str(exc):  # before 4.51: no chunked prefill
            raise ProbeSkipped(f"no chunked prefill on this release: {exc}") from exc
        raise
    return check_rows_against_reference(subject.model, [row], run,
                                        "Gemma-2, cache_implementation='hybrid', 19-token prompt in chunks of 5",
                                        eos_token_id=[])
