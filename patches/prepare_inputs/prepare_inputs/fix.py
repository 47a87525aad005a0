"""prepare-inputs: ``model.prepare_inputs_for_generation`` is not a usable decode step outside ``generate()``.

The defect. Custom decoding loops (speculative decoding, RL rollouts, serving code, logits processors such as
classifier-free guidance) call ``model.prepare_inputs_for_generation(input_ids, past_key_values=cache,
attention_mask=mask)`` with the whole sequence, the cache and the mask, and feed the result to ``forward``.
``generate()`` passes more than that, and the method came to depend on it (tiny models, every architecture of
tests/prepare_inputs, measured on the matrix releases):

- 4.45 .. 5.2: the method needs ``cache_position`` (each model's own override up to 4.45, the generic one from
  4.46); without it ``TypeError: 'NoneType' object is not subscriptable`` (on 5.0 - 5.2 already at the first
  step, since ``use_cache`` alone sends it down that path). Models still on legacy tuple caches on 4.46 (gpt2,
  gpt_bigcode, opt) are spared.
- 5.3 .. 5.24: trimming moved to a new ``next_sequence_length`` argument and position ids to ``generate()``
  itself (upstream PR 44130): the whole sequence is fed into the cache again (logits off by 0.03-0.5 on tiny
  models, crashes for bloom and opt), and absolute-position models (gpt2, gpt_neo, gpt_bigcode) get positions
  that ignore left padding.
- every release (4.40 .. 5.24): a caller that does not grow the mask by the new token gets a shape error (up to
  5.2) or silently wrong logits (5.3+): the method passes the mask through as it came.
- encoder-decoder models (T5, BART, Whisper), the decoder ids fed whole each step: right on 4.40 - 4.45;
  4.46 - 4.47 T5 raises TypeError (BART/Whisper on legacy tuples are right; BART fed the last token raises
  IndexError); 4.53 - 5.2 TypeError for all three; 5.3 - 5.24 the decoder ids are not trimmed (logit diff: T5
  2.2 - 2.9, BART 0.37, Whisper 0.29).

Detection (``probe``): a left-padded batch decoded by hand, each step calling ``prepare_inputs_for_generation``
with only (whole ids, cache, mask): tiny Llama with the mask grown by the caller, tiny gpt2 (absolute positions)
with a mask never grown; and a tiny T5 fed its whole decoder ids with the encoder output. Each step's logits
must equal a no-cache forward over the unpadded row (for T5: over the decoder ids with the same encoder output;
atol 1e-4).

Correction. The generic method and every model class's own override (those of later classes too, e.g.
remote-code models, through ``wrap_subclasses``) are wrapped. A call that carries what ``generate()`` passes
(``next_sequence_length`` from 5.3, a ``cache_position`` before) is left alone, so ``generate()`` is
bit-identical with and without the patch. Any other call is completed into the call ``generate()`` would have
made. First, how many of the ids are new, from what the call itself states (``helpers.decode.stated_new_tokens``):
its ``cache_position`` or ``position_ids``, a mask as wide as cached + ids (all new) or no wider than the ids
(the whole sequence), or, for encoder-decoder models, decoder ids that begin with the start token (the whole
sequence). Ids longer than the cache with none of these are ambiguous, and transformers' own contract decides:
from 5.3 "already sliced" (all new, as upstream feeds them); up to 5.2, which has no such contract, the call
goes on unchanged and fails, or not, exactly as without hf_genfix; the guess is logged at debug level. Then:
the cache under this release's keyword (``cache`` from 5.24, ``past_key_values`` before), the mask grown to
cached + new tokens (never cut), ``cache_position`` where the method takes one, ``next_sequence_length`` (5.3+),
and from 5.3 2-D position ids ``cumsum(mask) - 1`` (0 at padding) of the new tokens for decoder-only models whose
forward takes them, when the mask has padding (multi-axis mrope models are left alone; up to 5.2 the method
derives them from the mask itself). Encoder-decoder calls use the decoder's mask and positions
(``decoder_attention_mask``, ``decoder_position_ids``) and never touch the encoder's ``attention_mask``. A
cache given positionally in the 4.x order is found on 5.3+ too. The upstream method then does the rest, so
model-specific overrides keep their behaviour. State-space caches (``cache_params``) are left alone.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from hf_genfix.helpers.decode import (
    cache_length,
    forward_spec,
    grow_mask,
    name_positional,
    parameters_of,
    positions_from_mask,
    renames_keyword,
    stated_new_tokens,
)
from hf_genfix.toolkit import hidden_from_warnings, recorder
from hf_genfix.toolkit.prepare_inputs import GENERIC, wrap_overrides

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

log = logging.getLogger("hf_genfix")


class _Era:
    """The calling convention of the installed release, read from the generic method's signature."""

    def __init__(self, generic: Any):
        from hf_genfix import Drift

        sig = inspect.signature(generic)
        params = sig.parameters
        if "cache" in params:
            self.cache_key, self.other_cache_key = "cache", "past_key_values"  # 5.24+
        elif "past_key_values" in params or any(p.kind is p.VAR_POSITIONAL for p in params.values()):
            # (*args, **kwargs) is 4.40 - 4.41: the generic only raises and every model has its own override.
            self.cache_key, self.other_cache_key = "past_key_values", "cache"
        else:
            raise Drift(f"{GENERIC} takes neither cache nor past_key_values: {sig}")
        # 5.3+: generate() passes next_sequence_length on every step and derives position ids itself.
        self.trims_by_length = "next_sequence_length" in params
        # 4.46 - 5.11: the generic method takes cache_position (and needs it up to 5.2).
        self.cache_position = "cache_position" in params
        self.first_iteration = "is_first_iteration" in params

    def from_generate(self) -> Any:
        """A test on a call's keyword arguments: does it carry what generate() passes on this release?"""
        if self.trims_by_length:
            return lambda kwargs: "next_sequence_length" in kwargs
        # Up to 5.2 generate() passes cache_position to every model (it keeps it None without a cache on 4.41 -
        # 4.45; completing such a call changes nothing, see _as_generate_call).
        return lambda kwargs: kwargs.get("cache_position") is not None


def install(patcher: Any) -> None:
    generic = patcher.require(GENERIC, "**kwargs")
    era = _Era(generic)
    from_generate = era.from_generate()

    def prepare_inputs_for_generation(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if record.on:
            record.seen()
        call = None if from_generate(kwargs) or instance is None else \
            _as_generate_call(wrapped, instance, args, kwargs, era)
        if call is None:
            return record.through(wrapped, args, kwargs)  # generate()'s own call, or one left as it came
        return wrapped(*call[0], **call[1])

    wrap_overrides(patcher, prepare_inputs_for_generation)


@hidden_from_warnings
def _as_generate_call(wrapped: Any, model: Any, args: tuple, kwargs: dict, era: _Era) -> Any:
    """(args, kwargs) of the call ``generate()`` would make for this step, or None to leave the call alone."""
    import torch

    config = getattr(model, "config", None)
    if config is None or "cache_params" in kwargs:
        return None
    # Encoder-decoder models: the ids are the decoder's, ``attention_mask`` is the encoder's (never touched) and
    # the decoder's own mask and positions go by ``decoder_*`` names.
    seq2seq = bool(getattr(config, "is_encoder_decoder", False))
    mask_key, positions_key = ("decoder_attention_mask", "decoder_position_ids") if seq2seq else (
        "attention_mask", "position_ids")
    if len(args) > 1:
        args, kwargs = name_positional(wrapped, args, kwargs)
        nsl = kwargs.get("next_sequence_length")
        if nsl is not None and not isinstance(nsl, int) and era.cache_key not in kwargs:
            # The 4.x positional order (input_ids, past_key_values) on 5.3+, where next_sequence_length is second.
            kwargs[era.cache_key] = kwargs.pop("next_sequence_length")
    kwargs = dict(kwargs)
    input_ids = args[0] if args else kwargs.pop("input_ids", None)
    if input_ids is None or getattr(input_ids, "ndim", 0) != 2:
        return None
    old_name = era.other_cache_key in kwargs and kwargs.get(era.cache_key) is None
    if old_name:
        # A loop written for another release names the cache the other way.
        kwargs[era.cache_key] = kwargs.pop(era.other_cache_key)
    try:
        cached = cache_length(kwargs.get(era.cache_key))
    except TypeError:
        return None
    mask = kwargs.get(mask_key)
    mask = mask if mask is not None and getattr(mask, "ndim", 0) == 2 else None
    width = input_ids.shape[1]
    new = stated_new_tokens(width, cached, mask.shape[1] if mask is not None else None,
                            kwargs.get(positions_key), kwargs.get("cache_position"),
                            from_start=seq2seq and _starts_decoding(model, input_ids))
    if (new is not None and new < width and mask is not None and mask.shape[1] <= width
            and kwargs.get(positions_key) is None and kwargs.get("cache_position") is None and not seq2seq):
        # Read from the mask alone: the 4.x contract (whole ids, the mask over them). A chunk of new ids given
        # with a mask over the chunk only (a malformed call) has the same shapes and is fed short; say so.
        log.debug("prepare-inputs: a mask as wide as the %d ids, %d cached positions: taken as the whole "
                  "sequence, %d new ids fed (give cache_position or a mask over cache + ids for a chunk)",
                  width, cached, new)
    if new is None:
        # Ids longer than the cache, and nothing that says whether they are the whole sequence or new tokens
        # after it. The one rule (docs/prepare-inputs.md): transformers' own contract decides. From 5.3 that is
        # "already sliced": all ids are new, as upstream feeds them. Up to 5.2 there is none (the method needs
        # cache_position): the call goes on as it came and fails, or not, exactly as without hf_genfix.
        log.debug("prepare-inputs: %d input ids after %d cached positions, no mask, positions or cache_position: "
                  "%s", width, cached, "taken as new tokens (the 5.3+ contract)" if era.trims_by_length else
                  "passed on unchanged (this release has no contract for it)")
        if not era.trims_by_length:
            return (input_ids,), kwargs
        new = width
    if mask is not None and mask.shape[1] < cached + new:
        mask = kwargs[mask_key] = grow_mask(mask, cached + new)
    takes_cache_position = era.cache_position or "cache_position" in parameters_of(wrapped)[1]
    if takes_cache_position and kwargs.get("cache_position") is None:
        # The generic method (4.46 - 5.11) or the model's own override (4.40 - 4.45) takes it; generate() passes it.
        kwargs["cache_position"] = torch.arange(cached, cached + new, dtype=torch.long, device=input_ids.device)
    if era.trims_by_length:
        kwargs["next_sequence_length"] = new if new < width else None
        if (mask is not None and not seq2seq and kwargs.get("position_ids") is None
                and forward_spec(model).positions and bool((mask == 0).any())):
            # Up to 5.2 the method derives them from the mask itself (and gpt2's 4.40 override drops given ones).
            # Without padding the forward's own positions (cached .. cached + new) are these: the call is left as
            # upstream makes it.
            kwargs["position_ids"] = positions_from_mask(mask, new)
    if era.first_iteration and cached == 0 and kwargs.get("inputs_embeds") is not None:
        kwargs.setdefault("is_first_iteration", True)
    if record.on:
        record.changed("fed %d of %d ids%s", new, width,
                        ", positions from the mask" if "position_ids" in kwargs else "")
    if old_name and renames_keyword(wrapped, era.other_cache_key):
        # 5.24 takes `past_key_values=` itself and warns (FutureWarning) that it goes away in 5.40: the user's
        # keyword goes on as given, so that upstream's deprecation still reaches the user.
        kwargs[era.other_cache_key] = kwargs.pop(era.cache_key)
    return (input_ids,), kwargs


def _starts_decoding(model: Any, input_ids: Any) -> bool:
    """Every row begins with the decoder start token: the decoder ids are the whole sequence, since a chunk that
    follows a cache begins at a later position, and the start token only ever sits at position 0."""
    start = getattr(getattr(model, "generation_config", None), "decoder_start_token_id", None)
    if start is None:
        start = getattr(model.config, "decoder_start_token_id", None)
    if not isinstance(start, int) or isinstance(start, bool):
        return False
    return bool((input_ids[:, 0] == start).all())
