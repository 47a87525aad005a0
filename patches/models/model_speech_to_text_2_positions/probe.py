"""The probe of ``model-speech-to-text-2-positions`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles import ProbeSkipped, check_rows_against_reference, generate_steps, left_pad, tiny_model
    from hf_genfix.oracles.sliding import prompts

    try:
        model = tiny_model("speech_to_text_2")
    except AttributeError as exc:  # later 4.5x: the deprecated model no longer initialises its weights
        raise ProbeSkipped(f"speech_to_text_2 cannot be built on this release: {exc}") from exc
    rows = prompts(7, 4, seed=9)
    ids, mask = left_pad(rows, pad_id=model.config.pad_token_id)
    run = generate_steps(model, ids, mask, max_new_tokens=6, pad_token_id=model.config.pad_token_id,
                         eos_token_id=None)
    return check_rows_against_reference(model, rows, run, "speech_to_text_2, rows of 7 and 4 tokens left-padded, "
                                        "6 greedy tokens", eos_token_id=[])
