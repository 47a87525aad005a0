"""The probe of ``prepare-inputs-logits-to-keep`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

import inspect
from typing import Any


def probe() -> dict[str, Any]:
    import torch

    from hf_genfix.oracles import DefectObserved, assert_close, reference_logits, tiny_model
    from hf_genfix.oracles.decode import DEFAULT_ROWS, UPSTREAM_ERRORS

    model = tiny_model("phi3")
    row = list(DEFAULT_ROWS[1])
    ids = torch.tensor([row], device=model.device)
    call: dict[str, Any] = {"attention_mask": torch.ones_like(ids), "use_cache": True}
    if "cache_position" in inspect.signature(model.prepare_inputs_for_generation).parameters:
        call["cache_position"] = torch.arange(ids.shape[1], device=ids.device)  # what the method needs up to 5.2
    with torch.no_grad():
        try:
            inputs = model.prepare_inputs_for_generation(ids, **call)
            logits = model(**inputs).logits
        except UPSTREAM_ERRORS as exc:
            raise DefectObserved(f"phi3 prefill through prepare_inputs_for_generation: {type(exc).__name__}: "
                                 f"{exc}", error=type(exc).__name__) from exc
    expected = reference_logits(model, row)
    diff = assert_close(logits[0], expected, "phi3 prefill through prepare_inputs_for_generation")
    return {"max_logit_diff": diff, "logits_shape": list(logits.shape)}
