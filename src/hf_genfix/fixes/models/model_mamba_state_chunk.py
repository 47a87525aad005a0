"""model-mamba-state-chunk: before 5.17 (4.56.2-5.15.0 measured), Mamba given a cache that already holds a state
and more than one token is silently wrong, and no correction is safe here: the patch refuses the call with a clear
error (from 5.17.0 ``model-mamba-continuation`` corrects it).

The defect. On 4.x and 5.0-5.4 (``MambaCache``; 5.5-5.16 keep the same two paths in the generic cache),
``MambaForCausalLM.forward`` documents ``cache_params`` as "the model uses the previous state ... as if
the model add state_input_ids + input_ids as context", but its mixer (``MambaMixer.slow_forward`` /
``cuda_kernels_forward``) only handles two cases: a prompt (``cache_position`` as long as the conv kernel: the
convolution restarts from zeros, overwriting the cached window) and one new token. Several tokens after a state --
``generate(prompt + next turn, cache_params=cache)`` (the model's own cache argument, the only one it takes on 4.x;
generate() then feeds the whole conversation at positions 0..n-1 on top of the state), or a chunk through
``forward(chunk, cache_params=cache, cache_position=...)`` -- come out silently wrong. Measured on the hunt's loud
tiny Mamba (std 0.3, state 8, conv 4) on 4.57.6: generate() continuing a forward's cache_params 6.28 (one row) and
7.48 (left-padded batch of 3); a 5-token chunk after a cache 7.97 (max |logit diff| against a no-cache forward).
The probe's figure is 4.08 on 4.56.2, 4.57.6 and 5.0.0, 1.96 on 5.5.0, 4.03 on 5.13.0, 0.55 on 5.15.0.

Why a refusal. A correction would have to rebuild the conv window and the scan's start on the 4.x ``MambaCache``
(fixed-size tensors, one ``cache_position`` convention per path, a CUDA kernel path not run here; the code changed
three times in this range) and tell generate() which of the ids the state has seen, which the cache does not record.
A loud error is never worse than a silently wrong answer, and every call upstream gets right (a prompt, one token at
a time, a cache without a state) is untouched.

Detection. ``probe()``: a loud tiny Mamba, a 10-token prompt run with ``use_cache=True``, then ``generate(prompt +
3 tokens, cache_params=deepcopy(cache))``: with the patch it raises ``MambaStateChunkUnsupported`` (the probe
passes), without it the steps differ from a no-cache forward.

Correction. ``MambaForCausalLM.forward`` is wrapped: given ``cache_params`` that holds a state (``has_previous_state``
from 5.5, an SSM state not all zeros before) and more than one token, it raises ``MambaStateChunkUnsupported``
naming the model, the release and ``HF_GENFIX_MODEL_MAMBA_STATE_CHUNK=off``.
"""

from __future__ import annotations

import inspect
from typing import Any

PATCH = "model-mamba-state-chunk"
FORWARD = "transformers.models.mamba.modeling_mamba:MambaForCausalLM.forward"


class MambaStateChunkUnsupported(RuntimeError):
    """Several tokens fed after a Mamba cache that holds a state, on a release whose mixer cannot continue it."""


def install(patcher: Any) -> None:
    install_refusal(patcher, FORWARD, PATCH)


def install_refusal(patcher: Any, forward: str, patch: str) -> None:
    """Refuse, in ``forward`` (a Mamba-like causal LM's), several tokens after a cache that holds a state."""
    patcher.require(forward, "input_ids", "inputs_embeds", "cache_params")
    switch = f"HF_GENFIX_{patch.upper().replace('-', '_')}=off"
    patcher.wrap(forward, lambda wrapped, instance, args, kwargs: _forward(wrapped, instance, args, kwargs, switch))


def _forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict, switch: str) -> Any:
    bound = inspect.signature(wrapped).bind(*args, **kwargs)
    cache = bound.arguments.get("cache_params")
    ids, embeds = bound.arguments.get("input_ids"), bound.arguments.get("inputs_embeds")
    fed = ids.shape[1] if ids is not None else embeds.shape[1] if embeds is not None else 0
    if cache is not None and fed > 1 and _holds_state(cache):
        import transformers

        raise MambaStateChunkUnsupported(
            f"{type(instance).__name__}: {fed} tokens fed after a cache_params that already holds a state are "
            f"silently wrong on transformers {transformers.__version__} (the mixer continues a state one token at "
            f"a time only: a chunk restarts the convolution and generate() feeds the whole conversation again), and "
            f"hf_genfix cannot correct it safely on this release. Generate the whole conversation without "
            f"cache_params, feed the new tokens one at a time, or set {switch} to get upstream's behaviour.")
    return wrapped(*args, **kwargs)


def _holds_state(cache: Any) -> bool:
    flag = getattr(cache, "has_previous_state", None)
    if callable(flag):  # 5.5 on: the generic cache, per layer (Mamba's layers are all recurrent)
        try:
            return bool(flag(0))
        except (ValueError, IndexError, TypeError):
            return False
    states = getattr(cache, "ssm_states", None)  # 4.x-5.4: MambaCache, zeros until a forward fills it
    if states is None:
        return False
    try:
        return any(bool(s.abs().sum() > 0) for s in (states if isinstance(states, (list, tuple)) else [states]))
    except (AttributeError, TypeError):
        return False


def probe() -> dict:
    return probe_refusal("mamba")


def probe_refusal(model_type: str) -> dict:
    import copy

    import torch

    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps
    from hf_genfix.oracles.sweep_continuations import loud_model

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
