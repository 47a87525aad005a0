"""decoding-prefill-chunks-inputs: on 4.51 - 4.57, ``generate(prefill_chunk_size=k)`` with an image or
``inputs_embeds`` in the prompt is silently wrong from the first token.

The defect. ``GenerationMixin._prefill_chunking`` (new in 4.51.0) splits ``input_ids[:, :-1]`` into chunks of
``k`` and calls ``prepare_inputs_for_generation`` on each. Everything else the prompt came with is lost on the way:

- ``inputs_embeds`` are only used when the cache positions cover all of them, which no chunk does: every chunk
  is embedded from its ids. A soft prompt, or the image features BLIP-2, InstructBLIP and Idefics merge into the
  embeddings their own ``generate()`` hands the language model, are replaced by the embeddings of the placeholder
  ids. Embeddings alone (no ids) make the loop crash on an empty chunk.
- ``pixel_values`` (and the other image inputs) go with the first chunk only, while their placeholder tokens
  span several: Idefics 2/3 and LLaVA-like models merge the features into the wrong places (4.51, silently) or
  raise "Image features and image tokens do not match" (4.53 on).

5.0 replaced the loop with ``GenerationMixin._prefill``, as wrong until 5.23 (decoding-image-prefill-chunks);
4.x never got a fix.

Detection. The probe runs two sweep scenarios on loud tiny models (every matrix drawn at std 0.3):
``image-prefill-chunks-padded`` on BLIP-2 (a left-padded batch of two image prompts, chunks of 3) and
``inputs-embeds-prefill-chunks`` on Llama (a left-padded batch given as ids plus embeddings that are not the ids'
own, chunks of 3). Every step is checked against the no-cache forward of each row with its image or its
embeddings.

Correction. When the prompt carries an image input or ``inputs_embeds`` and needs more than one chunk, the
wrapper returns the model's keyword arguments untouched. ``_sample`` then finds no cache filled, and its first
step is the one-pass prefill of the whole prompt, as without ``prefill_chunk_size``. That first step goes
through the same forward as the decoding steps: the compiled one where the release compiles them (a static cache
on an accelerator), and the plain forward otherwise. One ``HFGenfixWarning`` per model type says so, because the
chunking's memory bound is given up for that call. These calls keep upstream's chunk loop:

- text-only prompts;
- prompts that fit in one chunk;
- a prompt without a cache (upstream's own error);
- mllama, whose image reaches every chunk through its cross-attention states (right, measured).
"""

from __future__ import annotations

from typing import Any

from hf_genfix.helpers.decode import has_image_inputs
from hf_genfix.toolkit import bound_arguments, recorder, warn_once

CHUNKING = "transformers.generation.utils:GenerationMixin._prefill_chunking"
# Model types that 4.51 - 4.57 chunk right with an image: mllama's image reaches every chunk through the
# cross-attention states. They keep upstream's chunks (and padding-prefill-chunks' positions) bitwise.
CHUNKS_RIGHT = ("mllama",)
record = recorder(__name__)


def install(patcher: Any) -> None:
    patcher.require(CHUNKING, "input_ids", "generation_config", "**model_kwargs")
    patcher.wrap(CHUNKING, _prefill_chunking)


def _prefill_chunking(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    if record.on:
        record.seen()
    try:
        call = bound_arguments(wrapped, args, kwargs)
    except TypeError:
        return wrapped(*args, **kwargs)
    ids, config = call.pop("input_ids", None), call.pop("generation_config", None)
    chunk = getattr(config, "prefill_chunk_size", None)
    embeds = call.get("inputs_embeds")
    if not chunk or ids is None or "past_key_values" not in call:
        return wrapped(*args, **kwargs)
    if embeds is None and not has_image_inputs(call):
        return wrapped(*args, **kwargs)  # the ids are the whole prompt: upstream's loop (+ padding-prefill-chunks)
    model_type = getattr(getattr(instance, "config", None), "model_type", "")
    if model_type in CHUNKS_RIGHT:
        return wrapped(*args, **kwargs)
    length = ids.shape[-1] if embeds is None or ids.shape[-1] else embeds.shape[1]
    if length == 0 or length - 1 <= chunk:
        return wrapped(*args, **kwargs)  # one chunk (or nothing) to prefill: no split to lose anything in
    warn_once(record.patch_id, model_type,
              f"prefills a prompt with {'inputs_embeds' if embeds is not None else 'an image'} wrongly in chunks "
              f"(prefill_chunk_size={chunk}, {model_type}): this prefill runs in one pass instead",
              off="to keep upstream's chunks")
    if record.on:
        record.changed("one-pass prefill of a %d-token prompt with %s (prefill_chunk_size=%d)", length,
                       "inputs_embeds" if embeds is not None else "an image", chunk)
    return call
