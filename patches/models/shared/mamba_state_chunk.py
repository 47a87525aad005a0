"""The refusal that ``model-mamba-state-chunk`` and ``model-falcon-mamba-state-chunk`` share: several tokens fed
after a cached state are refused with a clear error (the defect and why: ``model_mamba_state_chunk/fix.py``).
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import hidden_from_warnings, signature


class MambaStateChunkUnsupported(RuntimeError):
    """Several tokens fed after a Mamba cache that holds a state, on a release whose mixer cannot continue it."""


def install_refusal(patcher: Any, forward: str, patch: str) -> None:
    """Refuse, in ``forward`` (a Mamba-like causal LM's), several tokens after a cache that holds a state."""
    patcher.require(forward, "input_ids", "inputs_embeds", "cache_params")
    switch = f"HF_GENFIX_{patch.upper().replace('-', '_')}=off"
    patcher.wrap(forward, lambda wrapped, instance, args, kwargs: _forward(wrapped, instance, args, kwargs, switch))


@hidden_from_warnings
def _forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict, switch: str) -> Any:
    bound = signature(wrapped).bind(*args, **kwargs)
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
