"""padding-prefill-chunks: ``generate(prefill_chunk_size=k)`` on a left-padded batch is silently wrong on 4.51 - 4.57.

The defect. Chunked prefill (new in 4.51.0) feeds the prompt to the model ``k`` tokens at a time in
``GenerationMixin._prefill_chunking``, and gives every chunk ``position_ids = cache_position`` -- the positions
of an unpadded row. The decoding steps that follow, like an unchunked prefill, take positions from the attention
mask (a left-padded row starts at position 0 at its first real token). So every padded row of the batch is
prefilled at positions shifted by its padding and then decoded at the right ones: its logits differ from the row
generated alone from the first new token (RoPE and absolute-position models alike), and its tokens are
silently wrong. Rows without padding and batches of one are right. Upstream issue huggingface/transformers#43082;
5.0 rewrote the loop (still wrong, see sliding-window-prefill-chunks), 5.3.0 slices the mask-derived
``position_ids`` per chunk; never backported to 4.x.

Detection. A tiny Llama (RoPE) and a tiny GPT-2 (absolute positions: a larger shift; 4.51 gives it no
default cache, so the loop refuses it there), rows of 13, 5 and
9 tokens left-padded, chunks of 4, 6 new tokens: every row and step against a no-cache forward of the unpadded
row.

Correction. ``_prefill_chunking`` is wrapped: when the mask has padding, the release's loop is run with one
change -- each chunk's ``position_ids`` are the mask-derived positions (``cumsum(mask) - 1``, 1 on padding, what
``prepare_inputs_for_generation`` gives an unchunked prefill) at the chunk's cache positions. Everything else is
the upstream loop: the same chunks, mask prefixes, ``cache_position``, compiled forward where the release
compiles it, and the same returned ``model_kwargs``. Without padding (or without a mask, or a caller's own
``position_ids``) the upstream method runs untouched: its positions are right there.
"""

from __future__ import annotations

import inspect
from typing import Any

from hf_genfix.helpers.decode import prefill_chunks

CHUNKING = "transformers.generation.utils:GenerationMixin._prefill_chunking"


def install(patcher: Any) -> None:
    patcher.require(CHUNKING, "input_ids", "generation_config", "**model_kwargs")
    patcher.wrap(CHUNKING, _prefill_chunking)


def _prefill_chunking(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    try:
        call = inspect.signature(wrapped).bind(*args, **kwargs).arguments
    except TypeError:
        return wrapped(*args, **kwargs)
    input_ids, config = call.get("input_ids"), call.get("generation_config")
    model_kwargs = dict(call.get("model_kwargs") or {})
    mask = model_kwargs.get("attention_mask")
    if (
        not isinstance(input_ids, torch.Tensor)
        or not isinstance(mask, torch.Tensor)
        or mask.dim() != 2
        or mask.shape != input_ids.shape
        or bool(mask.all())
        or model_kwargs.get("position_ids") is not None
        or "past_key_values" not in model_kwargs  # upstream's own "without a cache" error
    ):
        return wrapped(*args, **kwargs)
    return prefill_chunks(instance, input_ids, config, model_kwargs, positions=mask_positions(mask))


def mask_positions(mask: Any) -> Any:
    """Positions as ``prepare_inputs_for_generation`` derives them from a 2-D mask (padding at 1)."""
    positions = mask.long().cumsum(-1) - 1
    return positions.masked_fill(mask == 0, 1)
