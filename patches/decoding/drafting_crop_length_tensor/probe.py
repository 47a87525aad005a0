"""The probe of ``drafting-crop-length-tensor`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    import torch

    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps
    from hf_genfix.oracles.sweep.continuations import loud_model as build

    try:
        # The loud tiny InklingText (every matrix at std 0.3), window 8: the 18-token prompt is past it when the
        # first drafts are cut. The sweep's tamer model shows the same defect as 0.00411 (prompt-lookup/inkling_text).
        model = build("inkling_text", sliding_window=8)
    except (ProbeSkipped, ValueError, KeyError) as exc:
        raise ProbeSkipped(f"no tiny InklingText on this release: {type(exc).__name__}: {exc}") from exc
    head = [38, 81, 69, 3, 57, 22]
    row = head * 3  # repeated n-grams: prompt lookup proposes drafts the model rejects
    ids = torch.tensor([row], device=model.device)
    run = generate_steps(model, ids, torch.ones_like(ids), max_new_tokens=5, prompt_lookup_num_tokens=3,
                         eos_token_id=None, pad_token_id=0)
    return check_rows_against_reference(model, [row], run, "InklingText prompt lookup (window 8, 18-token prompt)",
                                        eos_token_id=[])
