"""model-xlstm-continuation: on 5.2-5.4, generate() continuing an xLSTM cache passed as ``cache_params`` (the model's
own cache argument: a second turn, a reused prefix cache) feeds the wrong tokens on top of the cached state.

The defect. xLSTM's cache holds recurrent states only; how many tokens it has taken in is its ``seqlen_offset``.
generate() knows nothing of it under the name ``cache_params``: 5.1-5.4 (which drop xLSTM's own
``prepare_inputs_for_generation``) feed the whole conversation again on top of the state that already holds its
start (5.0's own one kept only the last token whenever a cache is given, dropping every new token of a turn but the
last). The sweep found it once it could build a tiny xLSTM (session 27): 5.2.0 second turn 1.85, reused prefix cache
1.67 at the first generated token; the probe 2.10 on 5.2.0-5.4.0. Passed as ``past_key_values`` the same cache is
continued right on 5.2. 4.54-5.1 cannot run the loud tiny model at all (a TypeError of upstream's own), 5.5-5.25
raise in generate() with its cache (``is_compileable`` missing): loud, not silent, so the range is 5.2-5.4.

Detection (``probe``): a first turn generated, then a second turn of three more tokens with
``cache_params=out.past_key_values``, every step against a no-cache forward of the conversation.

Correction. The model's ``prepare_inputs_for_generation`` (generate()'s inherited one, wrapped on the xLSTM class
alone) hands the forward the tokens the cache has not taken in -- ``input_ids[:,
seqlen_offset:]`` -- where more than one is new: a turn's first step. A decoding step (one new token), ids no longer
than the count, embeddings, and a cache that is not xLSTM's are upstream's.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import hidden_from_warnings, recorder, signature

PREPARE = "transformers.models.xlstm.modeling_xlstm:xLSTMForCausalLM.prepare_inputs_for_generation"
CACHE = "transformers.models.xlstm.modeling_xlstm:xLSTMCache"

record = recorder(__name__)


def install(patcher: Any) -> None:
    patcher.require(PREPARE, "input_ids")
    cache_class = patcher.require(CACHE)  # its seqlen_offset is read per call: a cache without one is upstream's
    patcher.wrap(PREPARE, lambda wrapped, instance, args, kwargs:
                 feed_unseen(wrapped, instance, args, kwargs, cache_class))


@hidden_from_warnings
def feed_unseen(wrapped: Any, instance: Any, args: tuple, kwargs: dict, cache_class: type) -> Any:
    if record.on:
        record.seen()
    inputs = wrapped(*args, **kwargs)
    bound = signature(wrapped).bind(*args, **kwargs).arguments
    extra = bound.get("kwargs") or {}
    ids = bound.get("input_ids")
    cache = bound.get("cache_params", extra.get("cache_params"))
    seen = getattr(cache, "seqlen_offset", None)
    if (not isinstance(cache, cache_class) or not isinstance(seen, int) or ids is None or seen <= 0
            or ids.shape[1] - seen < 2 or bound.get("inputs_embeds", extra.get("inputs_embeds")) is not None
            or not isinstance(inputs, dict) or "input_ids" not in inputs):
        return inputs
    unseen = ids[:, seen:]
    if inputs["input_ids"] is not None and tuple(inputs["input_ids"].shape) == tuple(unseen.shape) \
            and bool((inputs["input_ids"] == unseen).all()):
        return inputs  # upstream fed exactly those already
    if record.on:
        record.changed("fed the %d tokens past the cache's %d (upstream: %d)", unseen.shape[1], seen,
                       inputs["input_ids"].shape[1])
    inputs["input_ids"] = unseen
    positions = inputs.get("cache_position")
    if positions is not None and positions.dim() == 1 and positions.shape[0] != unseen.shape[1]:
        inputs["cache_position"] = positions.new_tensor(range(seen, ids.shape[1]))
    return inputs
