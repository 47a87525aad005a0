"""decoding-image-prefill-chunks / decoding-image-prefill-chunks-bidirectional: ``generate(prefill_chunk_size=k)``
with an image in a prompt longer than one chunk prefills the image wrongly (silently wrong from the first token).

The defects. 5.x's ``GenerationMixin._prefill`` feeds the prompt in chunks of ``k`` tokens through
``prepare_inputs_for_generation``.

- 5.3-5.22: the image inputs (``pixel_values`` ...) go with the first chunk only, while its placeholder tokens
  spread over several chunks: the models merge the image features into the first chunk's placeholders (or drop
  them) and embed the later placeholders as text. Every image-text model of the sweep that runs is wrong from the
  first generated token (loud tiny models: 2.3 to 6.6 logits on 5.12.1; Qwen-VL raises a shape error instead).
  5.1-5.2 are as wrong upstream, but there hf_genfix's sliding-window-prefill-chunks runs the chunk loop itself
  (wrapping the same method, inside this wrapper's reach): with it most image models raise "Image features and
  image tokens do not match" (loud) and Idefics2 stays wrong (6.65); not corrected here.
- 5.0-5.22, the same loss for a prompt given with ``inputs_embeds`` (a soft prompt, or the embeddings with the
  image merged in that BLIP-2-like models hand their language model): each chunk is embedded from its ids, the
  embeddings being used only when the cache positions cover them all (tiny text models: 0.07 to 3.4 logits; with
  prepare-inputs on and this patch off, a shape error). 5.23+ raise a shape error on most text models and are
  silently wrong on others (FLINT on 5.24.0: 0.61): decoding-image-prefill-chunks-bidirectional runs those in one
  pass too.
- 5.23 on: the images are encoded once and each chunk gets the features of its own placeholders (right for
  causal attention), but Gemma-3, Gemma-4 and PaliGemma attend to an image (PaliGemma: to the whole image + prompt
  prefix) in both directions: a placeholder in one chunk cannot see those of the next, which the one-pass prefill
  lets it see (0.23 on Gemma-3, 0.79 on Gemma-4, 1.31 on PaliGemma, tiny loud models, 5.24.0).

Detection. ``probe()`` / ``probe_bidirectional()``: the sweep's image-text scenario ``image-prefill-chunks-padded``
(a left-padded batch of two image prompts, ``prefill_chunk_size=3``, every step against the no-cache forward of
each row with its image) on tiny LLaVA and Gemma-3 with loud weights.

Correction. Where the defect is (``inputs_embeds``, or an image input -- on 5.23+ only for the bidirectional
model types --, given on the first prefill of a prompt that spans more than one chunk), the prefill runs in one
pass, as without ``prefill_chunk_size`` -- the path the sweep checks as right -- and one ``HFGenfixWarning`` says
so (the chunking's memory bound is given up for that call). Text-only prompts, prompts that fit in one chunk,
later prefills of
assisted decoding and every model type the release chunks right (mllama on 5.3-5.22; all but the three
bidirectional ones on 5.23+) keep upstream's chunked prefill, bitwise.
"""

from __future__ import annotations

import copy
from typing import Any

from hf_genfix.helpers.decode import has_image_inputs
from hf_genfix.toolkit import hidden_from_warnings, recorder, warn_once

PREFILL = "transformers.generation.utils:GenerationMixin._prefill"
# Model types whose image (PaliGemma: image + prompt prefix) attention is bidirectional: on 5.23+ a chunk
# boundary inside it changes what its tokens see.
BIDIRECTIONAL = ("gemma3", "gemma4", "paligemma")
# Model types 5.3-5.22 chunk right with an image (measured on 5.12.1): mllama reads its image through
# cross-attention states that every chunk gets. They keep upstream's chunks, bitwise.
CHUNKS_RIGHT = ("mllama",)


def install(patcher: Any) -> None:
    if _encodes_per_chunk():
        # Forced onto 5.23+ (doctor --sweep tries every patch on a failure): there the causal image models chunk
        # right and the others are refused in words by upstream; turning those refusals into one-pass prefills is
        # not this patch's correction.
        raise _drift("this _prefill gives each chunk its own image features (5.23+): not the code fixed here")
    _install(patcher, "decoding-image-prefill-chunks", bidirectional_only=False)


def install_bidirectional(patcher: Any) -> None:
    if not _encodes_per_chunk():
        raise _drift("this _prefill gives the whole image to the first chunk (before 5.23): "
                     "decoding-image-prefill-chunks' code")
    _install(patcher, "decoding-image-prefill-chunks-bidirectional", bidirectional_only=True)


def _encodes_per_chunk() -> bool:
    """Whether the release's chunked prefill hands each chunk the features of its own placeholders (5.23.0 added
    ``_slice_mm_encoder_output`` for it)."""
    from transformers.generation import utils

    return hasattr(utils, "_slice_mm_encoder_output")


def _drift(why: str) -> Exception:
    from hf_genfix import Drift

    return Drift(why)


def _install(patcher: Any, patch: str, bidirectional_only: bool) -> None:
    patcher.require(PREFILL, "input_ids", "generation_config", "model_kwargs")

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        return _prefill(wrapped, instance, args, kwargs, patch, bidirectional_only)

    patcher.wrap(PREFILL, wrapper)


def _bind(args: tuple, kwargs: dict) -> tuple[Any, Any, dict, bool]:
    names = ("input_ids", "generation_config", "model_kwargs", "is_first_iteration")
    bound = dict(zip(names, args), **kwargs)
    return bound.get("input_ids"), bound.get("generation_config"), bound.get("model_kwargs") or {}, \
        bound.get("is_first_iteration", True)


@hidden_from_warnings
def _prefill(wrapped: Any, instance: Any, args: tuple, kwargs: dict, patch: str, bidirectional_only: bool) -> Any:
    one_pass = _one_pass(instance, args, kwargs, patch, bidirectional_only)
    if one_pass is None:
        return recorder(patch).through(wrapped, args, kwargs)
    if len(args) > 1:
        args = (args[0], one_pass, *args[2:])
    else:
        kwargs = dict(kwargs, generation_config=one_pass)
    return wrapped(*args, **kwargs)


def _one_pass(instance: Any, args: tuple, kwargs: dict, patch: str, bidirectional_only: bool) -> Any:
    """The generation config of a one-pass prefill where upstream's chunks would be wrong; None where they are
    right (or there is one chunk)."""
    ids, config, model_kwargs, first = _bind(args, kwargs)
    chunk = getattr(config, "prefill_chunk_size", None)
    if chunk is None or ids is None or not first:
        return None
    # Every release also chunks the ids of a prompt given with inputs_embeds and embeds each chunk from them (the
    # embeddings are used only when the cache positions cover them all): the same loss, the same one pass, for
    # every model type. 5.23+ raise a shape error on most models (loud) and are silently wrong on others (FLINT).
    embeds = model_kwargs.get("inputs_embeds")
    if embeds is None and not has_image_inputs(model_kwargs):
        return None
    model_type = getattr(getattr(instance, "config", None), "model_type", "")
    images_right = (model_type not in BIDIRECTIONAL) if bidirectional_only else (model_type in CHUNKS_RIGHT)
    if embeds is None and images_right:
        return None
    length = ids.shape[-1] if embeds is None or ids.shape[-1] else embeds.shape[1]
    if length - _cached(model_kwargs) <= chunk:
        return None  # one chunk: the same as one pass
    one_pass = copy.copy(config)
    one_pass.prefill_chunk_size = None
    warn_once(patch, model_type, f"prefills a prompt with {'an image' if embeds is None else 'inputs_embeds'} of "
              f"{model_type} wrongly in chunks (prefill_chunk_size={chunk}): this prefill runs in one pass instead",
              off="to keep upstream's chunks")
    return one_pass


def _cached(model_kwargs: dict) -> int:
    from hf_genfix.helpers.decode import cache_length

    cache = model_kwargs.get("cache", model_kwargs.get("past_key_values"))
    try:
        return cache_length(cache)
    except TypeError:
        return 0
