"""model-falcon-h1-chunk-state: Falcon-H1 drops its cached Mamba state when several tokens follow a cache.

The defect. Every Falcon-H1 layer runs a Mamba-2 mixer beside its attention. ``FalconH1Mixer`` has two paths: one
token with a cache that already holds this layer's state (the convolution window and the SSM state, advanced by
one token), and "anything else", written for a prompt: it convolves the tokens behind zeros and starts the scan
from a zero state, then overwrites the cache with what it computed. So when more than one token follows a cache
that holds a state -- chunked prefill (``prefill_chunk_size``: every chunk after the first), a conversation
continued with the ``past_key_values`` of the previous turn, a chunk fed through ``prepare_inputs_for_generation``
with its ``cache_position`` -- the mixer forgets everything before the chunk, while the attention beside it
remembers it: the logits are silently wrong (2.2-2.7 on the probe's tiny model, 2.8e-4 on the sweep's, whose
Mamba output weighs less; whether the tokens change depends on the model), and so is the state carried on. The
torch path was measured; the CUDA-kernel path (``mamba-ssm`` installed) has the same chunk code (no
``initial_states``), read, not run here, and the wrapper covers it too. From Falcon-H1's first release
(4.53.0) to 5.12.1; 5.13.0 rewrote the mixer to continue both states from the cache (``initial_states=``
the cached SSM state, the convolution over the cached window). Falcon-H1 alone: the other Mamba-2 mixers of those
releases (Bamba, GraniteMoeHybrid, NemotronH, Zamba2, Mamba-2) carry the same chunk path, but none of them is
built tiny by this release's configs here, so none is measured, and a patch for them needs its own manifest.

Detection. ``probe()``: a tiny Falcon-H1, a 3-token prefix run with a cache, then the next 10 tokens through
``prepare_inputs_for_generation`` with their ``cache_position`` and ``forward``: every one of the 10 positions'
logits against a no-cache forward of all 13 tokens.

Correction. ``FalconH1Mixer.forward`` is wrapped. When the cache already holds this layer's state and more than
one token comes, the wrapper feeds them to upstream's own forward one token at a time: the one-token path reads
and advances both states exactly as decoding does, and the outputs are concatenated. Upstream's test for "this
layer has a state" is the release's own: ``cache.has_previous_state(layer)`` from 5.5.0; before, the cache-wide
``has_previous_state`` flag with ``cache_position[0] > 0`` and the state's batch size (the conditions of its
one-token path, so that every step takes it). A prompt (no state yet) and single tokens go to upstream untouched.
A chunk with an attention mask that has zeros also does (a padded chunk after a state: where its pads belong in
the recurrence is the caller's guess, not ours). The cost: one mixer call per token of such a chunk.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import signature

MIXER = "transformers.models.falcon_h1.modeling_falcon_h1:FalconH1Mixer.forward"


def install(patcher: Any) -> None:
    patcher.require(MIXER, "hidden_states", "cache_params", "attention_mask")
    patcher.wrap(MIXER, _chunk_after_state)


def _chunk_after_state(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    hidden = args[0] if args else kwargs.get("hidden_states")
    if hidden is None or hidden.shape[1] < 2:  # a decoding step: upstream's one-token path, untouched
        return wrapped(*args, **kwargs)
    bound = signature(wrapped).bind(*args, **kwargs)
    cache = bound.arguments.get("cache_params")
    positions, mask = bound.arguments.get("cache_position"), bound.arguments.get("attention_mask")
    if cache is None or not _has_state(cache, instance.layer_idx, hidden, positions):
        return wrapped(*args, **kwargs)
    if mask is not None and not bool((mask == 1).all()):
        return wrapped(*args, **kwargs)
    outputs = []
    for i in range(hidden.shape[1]):
        bound.arguments["hidden_states"] = hidden[:, i:i + 1]
        if positions is not None:
            bound.arguments["cache_position"] = positions[i:i + 1]
        if mask is not None:
            bound.arguments["attention_mask"] = mask[:, -hidden.shape[1]:][:, i:i + 1]
        outputs.append(wrapped(*bound.args, **bound.kwargs))
    return torch.cat(outputs, dim=1)


def _has_state(cache: Any, layer: int, hidden: Any, positions: Any) -> bool:
    """Whether upstream's one-token path would take this layer's state (so that every step of the split does)."""
    flag = getattr(cache, "has_previous_state", None)
    if callable(flag):  # 5.5.0 on: the generic cache, per layer
        return bool(flag(layer))
    # 4.53.0-5.4.0: FalconHybridMambaAttentionDynamicCache, one flag for the cache (set after its first forward);
    # the one-token path also wants a cache position past 0 and states of the batch's size.
    if not flag or positions is None or int(positions[0]) <= 0:
        return False
    try:
        return cache.conv_states[layer].shape[0] == cache.ssm_states[layer].shape[0] == hidden.shape[0]
    except (AttributeError, IndexError, TypeError):
        return False
