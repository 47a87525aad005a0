"""The probe ``model-mamba-state-chunk`` and ``model-falcon-mamba-state-chunk`` share (the defect and the refusal:
``model_mamba_state_chunk/fix.py`` and ``mamba_state_chunk.py``)."""

from __future__ import annotations

from hf_genfix._patches.models.shared.mamba_state_chunk import MambaStateChunkUnsupported


def probe_refusal(model_type: str) -> dict:
    import copy

    import torch

    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps
    from hf_genfix.oracles.sweep.continuations import loud_model

    model = loud_model(model_type)
    row, turn = [17, 44, 91, 23, 5, 60, 12, 77, 30, 9], [40, 41, 42]
    with torch.no_grad():
        cache = model(torch.tensor([row], device=model.device), use_cache=True).cache_params
    ids = torch.tensor([row + turn], device=model.device)
    try:
        run = generate_steps(model, ids, torch.ones_like(ids), max_new_tokens=4, cache_params=copy.deepcopy(cache),
                             pad_token_id=0, eos_token_id=None, min_new_tokens=4)
    except MambaStateChunkUnsupported as exc:
        return {"refused": str(exc)[:60]}
    except RuntimeError as exc:
        # 5.4.0: upstream's mixer raises on this call (a shape error of the cached conv state): loud, so there is
        # no silent defect to observe here without the refusal.
        from hf_genfix.oracles import ProbeSkipped

        raise ProbeSkipped(f"upstream raises on this continuation here: {type(exc).__name__}: {exc}") from exc
    figures = check_rows_against_reference(model, [row + turn], run, f"{model_type}: generate() continuing cache_params",
                                           eos_token_id=[])
    if figures["max_logit_diff"] > 1e-4:  # unreachable: check_rows_against_reference raises first
        raise DefectObserved(f"{model_type}: generate() continuing cache_params", **figures)
    return figures
