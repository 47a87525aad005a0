"""The probe of ``model-nemotron-h-step-dt-limit`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps, left_pad
    from hf_genfix.oracles.outcome import ProbeSkipped
    from hf_genfix.oracles.sweep.continuations import loud_model

    # A higher floor (time_step_min 0.05, under time_step_max 0.1) makes the skipped clamp loud: more decoding
    # steps' dt fall below it than below the default 0.001 (0.0098 there on 5.24.0). One Mamba layer and one
    # attention layer: the hybrid's two kinds of cache layer, without the expert and MLP layers (5.14 and older
    # have no cache layer for an "mlp" layer: KeyError).
    try:
        model = loud_model("nemotron_h", time_step_min=0.05,
                           layers_block_type=["linear_attention", "full_attention"])
    except ProbeSkipped:
        raise
    except Exception as exc:  # noqa: BLE001 - a config that refuses the layer list (5.12 and older): no such model
        raise ProbeSkipped(f"this release's NemotronH config refuses the probe's layers: {type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''}") from exc
    rows = [[17, 44, 91, 23, 5, 60, 12, 77, 30, 9]]
    run = generate_steps(model, *left_pad(rows), max_new_tokens=4, pad_token_id=0, eos_token_id=None,
                         min_new_tokens=4)
    return check_rows_against_reference(model, rows, run, "nemotron_h: plain cached generate()", eos_token_id=[])
