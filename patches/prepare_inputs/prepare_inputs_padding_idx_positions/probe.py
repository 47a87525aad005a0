"""The probe of ``prepare-inputs-padding-idx-positions`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix._patches.prepare_inputs.shared.padding_idx_positions_probes import probe as roberta_probe

    return roberta_probe()
