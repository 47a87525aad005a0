"""drafting-crop-length-tensor: on 5.15-5.17, assisted decoding and prompt lookup crop the cache by a 0-d tensor,
and a sliding layer's length becomes a tensor that its next update grows in place: InklingText's queries then sit
one position too far (silently wrong tokens from the first rejected draft on).

The defect. ``_assisted_decoding`` counts the accepted drafts with ``(...).sum()``, a 0-d tensor, and calls
``cache.crop(-(candidate_length - n_matches))`` with it. A sliding-window layer past its window then stores
``cumulative_length - tokens_to_remove``: a tensor where it held an int. Its next ``update`` runs
``self.cumulative_length += n``, in place on that tensor, so a length a model read from the cache *before* the
update moves with it. InklingText (5.14+) reads its query offset that way (``get_query_offset``, "important to get
those values before updating the cache") and computes its relative position bias after the update: every query
is taken one position later than it is, and prompt lookup returns [115, 92, 115, 92, 115] where plain greedy (= the
no-cache forward's argmax) gives [115, 112, 71, 7, 82] (the sweep's tiny InklingText, window 8, 18-token prompt).
The cache itself is right: the same crop given ``-3`` instead of ``tensor(-3)`` gives the no-cache logits (4.8e-08).
5.18.0 recomputes ``n_matches = valid_tokens.shape[1] - 1`` (an int) before the crop in every branch. (The static
cache's full-attention layer keeps its length as a tensor by design and has the same outcome on every release with
Inkling: that is model-inkling-static-query-offset's defect, fixed where that length is read.)

Detection (``probe``): that prompt-lookup call, each step's logits against a no-cache forward of the row.

Correction. ``Cache.crop`` is wrapped in place (``DynamicCache`` and the encoder-decoder caches reach it): a 0-d
integer tensor is handed on as the int it holds (what 5.18 passes), anything else untouched. Same tokens removed
on every layer; only the type of the length the layers store changes, so every other model is bitwise upstream.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import recorder

CROP = "transformers.cache_utils:Cache.crop"

record = recorder(__name__)


def install(patcher: Any) -> None:
    patcher.require(CROP)
    patcher.wrap(CROP, _crop)


def _crop(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    if record.on:
        record.seen()
    if len(args) != 1 or kwargs or not _zero_d_integer(args[0]):
        return wrapped(*args, **kwargs)  # an int (5.18+, every other caller), or a call we do not read: upstream's
    amount = int(args[0])
    if record.on:
        record.changed("crop(%d) for a 0-d tensor: the layers keep an int length", amount)
    return wrapped(amount)


def _zero_d_integer(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_floating_point() \
        and not value.is_complex() and value.dtype is not torch.bool
