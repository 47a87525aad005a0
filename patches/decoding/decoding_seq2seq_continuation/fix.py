"""decoding-seq2seq-continuation: from 5.3 on, an encoder-decoder ``generate()`` that continues from a cache
(``past_key_values=`` / ``cache=``: a second turn from ``out.past_key_values``, a decoder prefix cached once and
reused) feeds the whole decoder sequence again on top of the cache: silently wrong from the first new token.

The defect. Up to 5.2, ``prepare_inputs_for_generation`` cut ``decoder_input_ids`` to the positions the cache
does not hold (``cache_position``). 5.3 moved that cut into ``GenerationMixin._prefill``, which cuts only when the
sequence is as wide as an attention mask: the decoder's ``decoder_attention_mask`` for an encoder-decoder model.
generate() makes no decoder mask (it makes one for a decoder-only model's prompt, and 5.20+ record its width when
they drop an all-ones one), so without a mask from the user nothing is cut: the cached tokens are fed again at
positions after the cache, and every new token attends to them twice. BART, T5, Marian, Pegasus, M2M100, mBART,
MVP, PLBart, UMT5, NLLB-MoE, SeamlessM4T's text model: 0.18 to 2.6 on the sweep's loud models, 5.3.0 to 5.25.0;
a forward over the same uncached tokens with the same cache is right (1.2e-6).

Detection. The sweep's ``s2s-second-turn`` and ``s2s-prefix-reuse`` scenarios (a first generate() and a second
from its returned cache with three more decoder tokens; a decoder prefix prefilled once by a forward and reused
through ``copy.deepcopy`` by two continuations), on one encoder row and on a right-padded encoder batch, every
new step against a no-cache forward of the unpadded encoder row and the whole decoder sequence.

Correction. Where upstream would cut nothing, ``_prefill`` gets the decoder ids the cache does not hold: what
5.2 fed, and what 5.3+ feed when given a decoder mask. It acts only when all of these hold, and otherwise leaves
the call as it is:

- the model is an encoder-decoder one whose inputs go through the generic ``prepare_inputs_for_generation``, and
  whose decoder takes several tokens after a cache (not FSMT's: ``CHUNK_AFTER_CACHE_WRONG``);
- the prefill is one pass (``prefill_chunk_size`` unset) from a cache that holds ``p > 0`` decoder positions;
- no ``decoder_attention_mask`` and no ``decoder_inputs_embeds`` were given (with a mask upstream cuts by itself);
- the decoder sequence is longer than ``p`` and every row starts with the decoder start token: generate() puts
  that token in front of any decoder ids that lack it (except Whisper's and Donut's), so such a sequence is the
  whole conversation, as generate()'s contract for a cache has it, and never new tokens alone.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.helpers.decode import cache_length
from hf_genfix.toolkit import recorder

PREFILL = "transformers.generation.utils:GenerationMixin._prefill"
# Model types whose decoder cannot take several tokens after a cache: FSMT builds its causal mask only without a
# cache, so the cut sequence's tokens would see each other (a wrong answer of another kind: 0.28 where upstream's is
# 0.45 on 5.25.0). They keep upstream's call; the path is on file in patches/open-findings.json.
CHUNK_AFTER_CACHE_WRONG = ("fsmt",)
record = recorder(__name__)


def install(patcher: Any) -> None:
    patcher.require(PREFILL, "input_ids", "generation_config", "model_kwargs")
    patcher.wrap(PREFILL, _prefill)


def _prefill(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    if record.on:
        record.seen()
    if not getattr(getattr(instance, "config", None), "is_encoder_decoder", False):
        return record.through(wrapped, args, kwargs)
    names = ("input_ids", "generation_config", "model_kwargs")
    bound = dict(zip(names, args), **kwargs)
    ids, config, model_kwargs = bound.get("input_ids"), bound.get("generation_config"), bound.get("model_kwargs")
    cached = _cached_positions(instance, ids, config, model_kwargs)
    if not cached:
        return record.through(wrapped, args, kwargs)
    if record.on:
        record.changed("fed the %d decoder tokens after %d cached of %d", ids.shape[1] - cached, cached,
                       ids.shape[1])
    uncut = ids[:, cached:]
    if args:
        args = (uncut, *args[1:])
    else:
        kwargs = dict(kwargs, input_ids=uncut)
    return wrapped(*args, **kwargs)


def _cached_positions(model: Any, ids: Any, config: Any, model_kwargs: Any) -> int:
    """How many leading decoder positions to leave out (the cache holds them); 0 where upstream's call stands."""
    from transformers.generation.utils import GenerationMixin

    if ids is None or not isinstance(model_kwargs, dict) or getattr(config, "prefill_chunk_size", None) is not None:
        return 0
    if getattr(model.config, "model_type", "") in CHUNK_AFTER_CACHE_WRONG:
        return 0
    if _defines("prepare_inputs_for_generation", type(model)) is not GenerationMixin:
        return 0  # a model that prepares its own inputs may cut them itself
    if model_kwargs.get("decoder_attention_mask") is not None or model_kwargs.get("decoder_inputs_embeds") is not None:
        return 0  # upstream cuts where the mask is as wide as the ids; embeddings are not ours to cut
    cache = model_kwargs.get("cache", model_kwargs.get("past_key_values"))
    try:
        cached = cache_length(cache)
    except TypeError:
        return 0
    if cached <= 0 or ids.dim() != 2 or ids.shape[1] <= cached:
        return 0
    start = _decoder_start(config, ids.device)
    if start is None or start.numel() not in (1, ids.shape[0]) \
            or not bool((ids[:, 0] == start.view(-1)).all()):
        return 0  # not a decoder sequence from its start (Whisper, Donut): not a guess to make
    return cached


def _defines(name: str, cls: type) -> type | None:
    """The class of ``cls``'s MRO whose own namespace holds ``name`` (a wrapper installed on it counts as its)."""
    return next((klass for klass in cls.__mro__ if name in vars(klass)), None)


def _decoder_start(config: Any, device: Any) -> Any:
    """The decoder start token generate() resolved for this call (a tensor on ``device``), or None."""
    import torch

    token = getattr(config, "_decoder_start_token_tensor", None)
    if token is None:
        token = getattr(config, "decoder_start_token_id", None)
    if token is None:
        return None
    return token.to(device) if isinstance(token, torch.Tensor) else torch.tensor(token, device=device)
