"""The probe of ``decoding-beam-recurrent-gemma`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

import warnings
from typing import Any


def tiny() -> Any:
    """A loud tiny RecurrentGemma with an attention block (recurrent, recurrent, attention): every dense matrix at
    the sweep's calibration, and the RMSNorm scales drawn around those of a trained model. Zero-initialised
    scales (the default from 4.57 on: ``1 + weight``) keep the tiny model's beams in their order, so that a state
    never reordered shows nothing (cached == uncached on 4.57.1 with zeros, not with the scales at 1)."""
    import torch

    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.tiny import calibrate, tiny_model

    try:
        model = tiny_model("recurrent_gemma", num_hidden_layers=3)
    except ProbeSkipped:
        raise
    except Exception as exc:  # noqa: BLE001 - a release whose RecurrentGemma does not build tiny
        raise ProbeSkipped(f"no tiny RecurrentGemma here: {type(exc).__name__}: {exc}") from exc
    calibrate(model)
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for module in model.modules():
            if "RMSNorm" in type(module).__name__ and isinstance(getattr(module, "weight", None), torch.Tensor):
                module.weight.copy_(1.0 + 0.3 * torch.randn(module.weight.shape, generator=generator))
    return model


def beams(model: Any, use_cache: bool) -> Any:
    import torch

    ids = torch.tensor([[3, 17, 42, 9, 77, 21, 5, 63, 30]])
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model.generate(ids, attention_mask=torch.ones_like(ids), num_beams=3, num_return_sequences=3,
                             max_new_tokens=6, do_sample=False, use_cache=use_cache, pad_token_id=0,
                             eos_token_id=None)
    return out[:, ids.shape[1]:]


def probe() -> dict:
    import torch

    from hf_genfix.oracles import DefectObserved, ProbeSkipped

    model = tiny()
    try:
        uncached = beams(model, use_cache=False)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise ProbeSkipped(f"beam search without a cache raises here: {type(exc).__name__}: {str(exc)[:160]}") \
            from exc
    try:
        cached = beams(model, use_cache=True)
    except (TypeError, ValueError, RuntimeError) as exc:
        # 4.46-4.48: the cached beam search raises where the uncached one runs (a keyword the model does not take,
        # a shape error): the same call, loud instead of wrong.
        raise DefectObserved(f"RecurrentGemma, 3 beams: with the cache it raises {type(exc).__name__}: "
                             f"{str(exc)[:160]}; without it it runs") from exc
    if not torch.equal(cached, uncached):
        raise DefectObserved(f"RecurrentGemma, 3 beams, 6 new tokens: with the cache {cached.tolist()} != without "
                             f"it {uncached.tolist()}", max_logit_diff=float("inf"))
    return {"max_logit_diff": 0.0, "beams": cached.shape[0]}
