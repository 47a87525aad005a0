"""The probe of ``sliding-window-prefill-chunks`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from transformers import GenerationConfig

    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.sliding import WINDOW, check_past_window, prompts, sliding_model

    if not hasattr(GenerationConfig(), "prefill_chunk_size"):
        from hf_genfix.oracles import ProbeSkipped

        raise ProbeSkipped("generate() has no prefill_chunk_size on this release")
    from hf_genfix.oracles.generation import uncompiled

    model = sliding_model("mistral")
    try:
        with uncompiled() as no_compile:
            return check_past_window(model, prompts(2 * WINDOW + 3), WINDOW + 4,
                                     "chunked prefill (chunks of 5) past the window", prefill_chunk_size=5,
                                     **no_compile)
    except (ValueError, IndexError) as exc:
        if "prefill chunking" not in str(exc) and "out of bounds" not in str(exc):
            raise
        raise DefectObserved(f"chunked prefill past a window of {WINDOW}: {exc}") from exc
