"""The probe of ``model-falcon-h1-chunk-state`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any


def probe() -> dict:
    from hf_genfix.oracles import DefectObserved, tolerance
    from hf_genfix.oracles.reference import max_diff

    logits, reference = chunk_after_prefix(tiny(), prefix=3, chunk=10)
    what = "falcon_h1: 10 tokens after a cached 3-token prefix"
    if logits.shape != reference.shape:
        raise DefectObserved(f"{what}: {logits.shape[1]} of {reference.shape[1]} tokens fed",
                             max_logit_diff=float("inf"))
    diff = max_diff(logits, reference)
    if not diff <= tolerance():
        raise DefectObserved(f"{what}: max |logit diff| {diff:.3g} vs a no-cache forward (atol {tolerance()}); "
                             f"the Mamba mixer restarted from a zero state", max_logit_diff=diff)
    return {"max_logit_diff": diff, "steps_compared": reference.shape[1]}


def tiny() -> Any:
    """The probe's Falcon-H1: small Mamba sizes, as the sweep builds it (the mixer's defaults are full-size under
    the tiny text sizes), and larger weights and Mamba output: with the defaults the mixer's share of a tiny
    model's logits is small (the defect is 7e-6 on 4.57.6, under the oracle's tolerance, 2.8e-4 on 5.12.0); with
    these 0.94 and 2.6."""
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep.core import _ssm_overrides, build

    try:
        return build("falcon_h1", seed=0, initializer_range=0.2, ssm_out_multiplier=4.0,
                     **_ssm_overrides("falcon_h1"))
    except ProbeSkipped:
        raise
    except Exception as exc:  # 5.4.0: FalconH1Config() itself fails its validation (use_cache typed int)
        raise ProbeSkipped(f"FalconH1Config cannot be built here: {type(exc).__name__}") from exc


def chunk_after_prefix(model: Any, prefix: int, chunk: int, rows: int = 1) -> tuple[Any, Any]:
    """(the chunk's logits, the same positions of a no-cache forward): ``prefix`` tokens run with a cache through
    the model's own prepare_inputs_for_generation (before 5.5 it builds the cache, which forward does not), then
    ``chunk`` tokens with their ``cache_position``."""
    import torch

    from hf_genfix.oracles.decode import prepare_cache_keyword

    gen = torch.Generator().manual_seed(prefix * 100 + chunk)
    device = model.device
    ids, n = torch.randint(3, 128, (rows, prefix + chunk), generator=gen, device="cpu").to(device), prefix + chunk
    with torch.no_grad():
        reference = model(ids, use_cache=False).logits[:, prefix:]
        first = model.prepare_inputs_for_generation(ids[:, :prefix], use_cache=True,
                                                    cache_position=torch.arange(prefix, device=device))
        cache = model(**first).past_key_values
        inputs = model.prepare_inputs_for_generation(ids[:, prefix:], **{prepare_cache_keyword(): cache},
                                                     use_cache=True, cache_position=torch.arange(prefix, n, device=device))
        inputs["logits_to_keep"] = 0  # Falcon-H1 asks for the last position only; every fed token is checked
        return model(**inputs).logits, reference
