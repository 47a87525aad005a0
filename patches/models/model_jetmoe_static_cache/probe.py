"""The probe of ``model-jetmoe-static-cache`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles import ProbeSkipped, check_rows_against_reference, generate_steps, left_pad, tiny_model
    from hf_genfix.oracles.sliding import prompts

    model = tiny_model("jetmoe", kv_channels=8)  # head size = hidden 32 / 4 heads (4.56.0 ropes that size)
    rows = prompts(10, seed=6)
    ids, mask = left_pad(rows)
    try:
        run = generate_steps(model, ids, mask, max_new_tokens=6, pad_token_id=0, eos_token_id=None,
                             cache_implementation="static")
    except ValueError as exc:
        if "does not support" in str(exc):
            raise ProbeSkipped(f"this release refuses a static cache for JetMoE: {exc}") from exc
        raise
    return check_rows_against_reference(model, rows, run, "jetmoe, static cache, 10-token prompt, 6 greedy tokens",
                                        eos_token_id=[])
