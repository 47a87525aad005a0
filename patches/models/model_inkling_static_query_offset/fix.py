"""model-inkling-static-query-offset: Inkling's full-attention ("hybrid") layers are silently wrong from the second
generated token with a static cache: their queries are placed one position too far.

The defect. ``InklingAttention.forward`` reads its query offset from the cache *before* writing the step's keys
(``q_offset = cache.get_query_offset(self.layer_idx)``, transformers 5.25.0 ``models/inkling/modeling_inkling.py:233``,
"Important to get those values before updating the cache to be correct") and uses it *after* the write
(``q_positions = torch.arange(q_length) + q_offset``, line 241), for the relative-position logits
(``InklingRelativeLogits``: ``q_positions - kv_positions``) and the log-scaling of full layers. With a static
cache a ``"hybrid"`` layer (linear attention and full attention in one layer) is a
``LinearAttentionAndStaticFullAttentionLayer``, whose ``get_seq_length`` is ``StaticLayer.get_seq_length``
(``cache_utils.py:504``): it returns the layer's counter itself, the tensor ``cumulative_length``, not its value.
``StaticLayer.update`` then advances that tensor in place (``self.cumulative_length.add_(kv_length)``, line 483),
so the offset the model read has moved on by the step's tokens when it is used: at every decoding step the query
sits one position to the right of its key, and the relative bias of every key is shifted by one. The prefill is
right (an uninitialised layer returns the int 0); every generated token after the first is wrong (0.17 on the loud
tiny inkling_text, 0.003-0.005 on the sweep's calibrated one). ``"hybrid_sliding"`` layers
(``StaticSlidingWindowLayer`` counts in a Python int) and a dynamic cache (``DynamicLayer`` returns an int) are
right. Every release with Inkling (5.14.0 on) has the same code; in 5.14-5.24 the combined layer inherits
``StaticLayer.get_seq_length``, 5.25.0 names it in its own body (``cache_utils.py:1451``).

Detection. A tiny inkling_text whose layers are both ``"hybrid"``, matrices at the loud continuation models' std,
a 10-token prompt and 6 greedy tokens with ``cache_implementation="static"``: every step against a no-cache
forward of the row.

Correction. ``LinearAttentionAndStaticFullAttentionLayer.get_seq_length`` is wrapped: where upstream's answer is the
layer's live counter (``result is layer.cumulative_length``), the caller gets a copy of it (``clone()``, on the
same device, no host sync), the value at the time of the call, which is what a caller that reads a length before an
update means; the counter itself, and every other answer, is upstream's. The value is the same, so every caller
that uses it at once (generate()'s positions, the masks) computes what it computed before, bitwise.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import recorder

TARGET = "transformers.cache_utils:LinearAttentionAndStaticFullAttentionLayer.get_seq_length"

record = recorder(__name__)


def install(patcher: Any) -> None:
    patcher.require(TARGET)
    patcher.wrap(TARGET, _get_seq_length)


def _get_seq_length(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    length = wrapped(*args, **kwargs)
    if instance is None or length is not getattr(instance, "cumulative_length", None):
        return length
    if record.on:
        record.seen()
    snapshot = length.clone()
    if record.on:
        record.changed("the static hybrid layer's length (%d) given as a copy, not its live counter", int(snapshot))
    return snapshot
