"""The probes of the KV-sharing patches (``kv_sharing_uncached.py`` gives the defect and the correction)."""

from __future__ import annotations

from typing import Any


def probe_uncached_forward(model_type: str, **overrides: Any) -> dict:
    """A loud tiny ``model_type`` with a KV-sharing layer: a forward of a 12-token prompt (past the sweep's sliding
    window) with ``use_cache=False`` against the same forward with a cache, the path the fixed releases agree with."""
    import torch

    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.sweep.continuations import loud_model

    model = loud_model(model_type, **overrides)
    gen = torch.Generator().manual_seed(17)
    ids = torch.randint(3, 128, (1, 12), generator=gen)
    with torch.no_grad():
        uncached = model(ids, use_cache=False).logits
        cached = model(ids, use_cache=True).logits
    diff = (uncached - cached).abs().max().item()
    if diff > 1e-4:
        raise DefectObserved(f"a forward with use_cache=False: max |logit diff| {diff:.3g} vs the same forward with a "
                             f"cache (the KV-sharing layers' keys and values)", max_logit_diff=diff)
    return {"max_logit_diff": diff}
