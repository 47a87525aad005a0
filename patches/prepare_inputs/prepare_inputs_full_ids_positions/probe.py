"""The probe of ``prepare-inputs-full-ids-positions`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix._patches.prepare_inputs.shared.openai_gpt_probes import tiny_openai_gpt
    from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad

    model = tiny_openai_gpt()
    rows = [[47, 117, 61, 13, 91, 7, 55, 6, 125]]
    run = generate_steps(model, *left_pad(rows), max_new_tokens=6, use_cache=True)
    return check_rows_against_reference(model, rows, run, "openai-gpt: cached greedy generate() vs no-cache forward")
