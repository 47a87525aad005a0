"""The probe of ``model-fuyu-prefill-image`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep.families import ImageTextSubject, image_cached

    try:  # builds the model and runs the oracle once, a no-cache forward of an image prompt (no generate())
        subject = ImageTextSubject("fuyu")
    except Exception as exc:  # noqa: BLE001 - 4.55.0: AttributeError, FuyuModel has no get_placeholder_tokens
        raise ProbeSkipped(f"Fuyu cannot run an image prompt on this release: {type(exc).__name__}: {exc}") from exc
    return image_cached(subject)
