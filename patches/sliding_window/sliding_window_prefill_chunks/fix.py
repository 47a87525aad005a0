"""sliding-window-prefill-chunks: ``generate(prefill_chunk_size=k)`` errors or is silently wrong on 5.0 - 5.2.

The defect. Chunked prefill feeds a long prompt to the model ``k`` tokens at a time. From 5.0.0 ``_prefill`` runs
the whole prompt through the chunk loop and returns the last chunk's logits, but the loop was carried over from
4.x, where the last prompt token was left for the first decoding step:

- after the loop it sets ``cache_position`` to one past the prompt, and the decoding loop adds one again, so
  every decoding step runs one position too far. Static caches overflow (``IndexError: index_copy_(): index 49
  is out of bounds``, every architecture); with a dynamic cache the sliding-window mask is shifted by one, so
  sliding models are silently wrong from the second new token on (full-attention layers do not notice);
- 5.0.0 builds no cache unless ``cache_implementation`` is set, so the loop refuses to start: "Cannot use prefill
  chunking without a cache" (every architecture). With this patch the first prefix goes through the unchunked
  ``_prefill``, whose forward creates the default cache, so chunked prefill runs there and is right -- the
  exception becomes the correct answer, never a wrong one;
- 5.2.0 prepares ``position_ids`` for the whole prompt in generate(), and the loop hands them to every chunk
  unsliced, so every chunk gets the last chunk's positions: wrong from the first new token, every architecture.

Measured: 5.0.0, 5.1.0 and 5.2.0 (tiny Mistral / Gemma-2 with window 8, batch 1 and a left-padded batch of 3,
default, dynamic and static caches); 5.3.0 rewrote the loop and passes. 4.x is not affected by this loop (4.56's
static sliding layer has its own defect with multi-token steps).

Detection. A tiny Mistral (every layer sliding, window 8), a 19-token prompt, chunks of 5, 12 new tokens: every
step's logits against a no-cache forward of the final sequence. Batch 1 on purpose: on 4.51 - 4.57 the chunk loop
(``_prefill_chunking``) gives every row the positions of an unpadded row, so a left-padded batch is wrong there on
every architecture -- a padding defect of the 4.x loop, patched by padding-prefill-chunks. Left-padded batches
on 5.0 - 5.2 are covered here (measured with padding-prefill-chunks' probe: 5.0.0 ValueError, 5.1.0 right,
5.2.0 wrong without this patch; right with it).

Correction. ``GenerationMixin._prefill`` is wrapped: when ``prefill_chunk_size`` is set (and the prompt is token
ids with a 2-D mask and a cache, what the upstream loop handles, on a model without a recurrent state), the prompt is prefilled by the release's own
unchunked ``_prefill`` on growing prefixes -- chunk ``i`` is prompt ``[:end_i]`` with the mask, ``position_ids``
and every other per-token input cut to ``end_i`` and ``cache_position`` set to the chunk's slots, so only the
chunk's tokens go through the model, against the cache of the previous chunks. Memory stays that of chunked
prefill, and what follows is exactly what follows an unchunked prefill: ``cache_position`` ends at the last
prompt position, the per-token inputs cover the whole prompt, and the cache is the one the chunks filled.
"""

from __future__ import annotations

import inspect
from typing import Any

from hf_genfix import Drift
from hf_genfix.helpers.decode import has_image_inputs
from hf_genfix.toolkit import recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

PREFILL = "transformers.generation.utils:GenerationMixin._prefill"


def install(patcher: Any) -> None:
    prefill = patcher.require(PREFILL, "input_ids", "generation_config", "model_kwargs")
    if "is_first_iteration" in inspect.signature(prefill).parameters:
        # 5.3.0 rewrote _prefill (inputs sliced against the cache, a correct chunk loop): not the code fixed here.
        raise Drift("this _prefill is the 5.3+ one, whose chunk loop is correct")
    patcher.wrap(PREFILL, _prefill)


def _prefill(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    try:
        call = inspect.signature(wrapped).bind(*args, **kwargs).arguments
    except TypeError:
        return wrapped(*args, **kwargs)
    input_ids, config, model_kwargs = call.get("input_ids"), call.get("generation_config"), call.get("model_kwargs")
    chunk = getattr(config, "prefill_chunk_size", None)
    if (
        not chunk
        or not isinstance(model_kwargs, dict)
        or not isinstance(input_ids, torch.Tensor)
        or input_ids.dim() != 2
        or model_kwargs.get("inputs_embeds") is not None
        or getattr(model_kwargs.get("attention_mask"), "dim", lambda: 2)() != 2  # a custom 4-D mask
        or getattr(instance.config, "is_encoder_decoder", False)
        or config.use_cache is False
        or model_kwargs.get("use_cache") is False  # upstream refuses chunking without a cache: let it say so
        # An image prompt: this loop, like upstream's, would hand the whole image to the first chunk while its
        # placeholders span several (silently wrong, or a ValueError). decoding-image-prefill-chunks prefills it in
        # one pass on these releases; with that patch off, upstream's loop, as without hf_genfix.
        or has_image_inputs(model_kwargs)
        # A model that keeps a recurrent state (Mamba-like mixers, gated delta nets: ``_is_stateful``): several
        # tokens after a state are that model's own question (a mixer that restarts its scan from zeros, found on
        # Jamba and Qwen3-Next on 5.2.0), not this loop's. Where upstream refuses ("Cannot use prefill chunking
        # without a cache") this loop turned the refusal into a silently wrong answer (Qwen3-Next 0.056, session 16).
        or getattr(type(instance), "_is_stateful", False)
        # The same for a model whose modeling module defines a cache class of its own (Lfm2-MoE's
        # HybridConvCache: short-convolution states, no _is_stateful on 5.2.0): a state this loop knows nothing of.
        # Upstream's "Cannot use prefill chunking without a cache" became 0.095 off there (session 27's sweep).
        or _keeps_own_cache(instance)
    ):
        return wrapped(*args, **kwargs)
    length = input_ids.shape[1]
    # Per-token inputs (mask, position_ids, token_type_ids, ...) are cut with the prompt, as generate() would
    # have them for a prompt that ended there.
    per_token = {
        key: value for key, value in model_kwargs.items()
        if key != "input_ids" and (key.endswith("_mask") or key.endswith("_ids"))
        and isinstance(value, torch.Tensor) and value.dim() >= 2 and value.shape[-1] == length
    }
    outputs = None
    if record.on:
        record.changed("prefilled %d tokens in chunks of %d", length, chunk)
    config.prefill_chunk_size = None  # generate()'s own copy of the config; restored below
    try:
        for start in range(0, length, chunk):
            end = min(start + chunk, length)
            for key, value in per_token.items():
                model_kwargs[key] = value[..., :end]
            model_kwargs["cache_position"] = torch.arange(start, end, dtype=torch.long, device=input_ids.device)
            call.update(input_ids=input_ids[:, :end], generation_config=config, model_kwargs=model_kwargs)
            outputs = wrapped(**call)
            if getattr(outputs, "past_key_values", None) is not None:
                model_kwargs["past_key_values"] = outputs.past_key_values
    finally:
        config.prefill_chunk_size = chunk
        model_kwargs.update(per_token)
    return outputs


def _keeps_own_cache(model: Any) -> bool:
    """Whether the model's modeling module defines a cache class of its own (a ``...Cache`` class whose module is
    that one, not one it imports from cache_utils)."""
    import sys

    module = sys.modules.get(type(model).__module__)
    if module is None:
        return False
    return any(isinstance(value, type) and name.endswith("Cache") and value.__module__ == module.__name__
               for name, value in vars(module).items())
