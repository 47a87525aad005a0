"""sliding-window-draft-keys: multi-token drafts crash with "The size of tensor a (9) must match ... (8)".

The defect. From 5.15.0 a ``DynamicSlidingWindowLayer`` can be rewound past its window: assisted decoding calls
``activate_past_recording()`` on the caches it will rewind, after which ``update`` keeps every state until the
next ``crop`` shrinks the layer back to ``sliding_window - 1`` tokens. But ``update`` then returns all the states
it holds, while ``get_mask_sizes`` -- from which the attention mask is built -- still reports
``sliding_window - 1 + query_length`` keys once the window is full. The drafter runs several forwards in a row
without a ``crop`` in between (one per draft token), so from its second draft token on the keys outnumber the
mask's columns: eager attention raises ``RuntimeError: The size of tensor a (9) must match the size of tensor b
(8)``, other kernels a broadcast error. 1-token drafts and prompt lookup (one forward per crop) are not affected.
Measured on 5.15.0, 5.16.0 and 5.17.0; 5.14.0 (no past recording) and 5.18.0 pass; fixed in 5.18.0 (PR 48280),
which slices the returned states to the ones ``get_mask_sizes`` advertises.

Detection. A tiny Mistral (every layer sliding, window 8), a 12-token prompt and 16 new tokens with assisted
decoding (2-token drafts from a second tiny Mistral): tokens equal to plain greedy, logits equal to a no-cache
forward of the final sequence. Two-token drafts because 5.15.0 has a second, unrelated drafter bug: it crops the
drafter's cache by one token whatever was rejected, which breaks drafts of 3 or more tokens on every
architecture (fixed in 5.16.0); that one is not a sliding-window defect and is not corrected here.

Correction. ``DynamicSlidingWindowLayer.update`` is wrapped in place: while the layer records its past, the
states it returns are cut to the last ``sliding_window - 1 + new tokens``, exactly the keys the mask describes
(what 5.18.0 does). The layer itself still holds every state, so ``crop`` can rewind it; without past recording
the wrapper returns upstream's result untouched, and so it does for a layer that also holds linear-attention
states (InklingText): cutting its keys lets the round reach a target verification that these releases get wrong
after a crop by a 0-d tensor (drafting-crop-length-tensor's defect), so upstream's error is kept (see ``_update``).
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

UPDATE = "transformers.cache_utils:DynamicSlidingWindowLayer.update"


def install(patcher: Any) -> None:
    patcher.require(UPDATE, "key_states", "value_states")
    patcher.require("transformers.cache_utils:DynamicSlidingWindowLayer.activate_past_recording")
    patcher.wrap(UPDATE, _update)


def _update(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    keys, values = wrapped(*args, **kwargs)
    if not instance.record_past:
        return keys, values
    if hasattr(instance, "conv_states"):
        # A layer that is also a linear-attention layer (LinearAttentionAndSlidingWindowAttentionLayer: InklingText's
        # 'hybrid_sliding' layers). Where upstream raises here (the drafter's forwards), cutting the keys lets the
        # round go on to the target's verification, which 5.15-5.17 get wrong on InklingText after a crop by a 0-d
        # tensor (drafting-crop-length-tensor's defect): a silently wrong draft (0.00424 on the sweep's InklingText,
        # 5.16.1) with that patch off. Left to upstream's RuntimeError, the honest answer; with both patches on the
        # cut would be right (measured on 5.16.1), but this patch cannot know that the other one is on.
        return keys, values
    new = args[0] if args else kwargs["key_states"]
    visible = instance.sliding_window - 1 + new.shape[-2]
    if keys.shape[-2] <= visible:
        return keys, values
    if record.on:
        record.changed("returned %d of %d keys", visible, keys.shape[-2])
    return keys[:, :, -visible:, :], values[:, :, -visible:, :]
