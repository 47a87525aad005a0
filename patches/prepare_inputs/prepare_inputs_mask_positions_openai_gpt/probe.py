"""The probe of ``prepare-inputs-mask-positions-openai-gpt`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix._patches.prepare_inputs.shared.openai_gpt_probes import tiny_openai_gpt
    from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad

    model = tiny_openai_gpt()  # not the sweep's Subject, which cannot build it before 4.48
    rows = [[47, 117, 61, 13, 91, 7, 55], [88, 19, 30], [5, 71, 102, 44, 9, 66, 23, 118, 37, 80]]
    run = generate_steps(model, *left_pad(rows), max_new_tokens=6, suppress_tokens=[0])
    return check_rows_against_reference(model, rows, run, "openai-gpt: left-padded batch vs each row alone")
