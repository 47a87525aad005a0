"""The probe of ``model-zamba2-step-dt-limit`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps, left_pad
    from hf_genfix.oracles.sweep.continuations import loud_model

    # A higher floor (time_step_min 0.05, under time_step_max 0.1) is what makes the skipped clamp loud: with
    # the default 0.001 the loud model shows it at 2.2e-04.
    model = loud_model("zamba2", time_step_min=0.05)
    rows = [[17, 44, 91, 23, 5, 60, 12, 77, 30, 9]]
    run = generate_steps(model, *left_pad(rows), max_new_tokens=4, pad_token_id=0, eos_token_id=None,
                         min_new_tokens=4)
    return check_rows_against_reference(model, rows, run, "zamba2: plain cached generate()", eos_token_id=[])
