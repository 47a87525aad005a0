"""model-phimoe-sliding-cache: PhiMoE on 4.56-4.57 is silently wrong once generation passes its sliding window.

The defect. 4.56 made ``DynamicCache(config=...)`` build a ``DynamicSlidingWindowLayer`` for every layer of a
model whose config has a ``sliding_window``: such a layer keeps only the last ``window - 1`` keys and returns them
with the new ones. ``generate()`` builds its cache that way, and so does ``PhimoeModel.forward`` when it is called
with ``use_cache=True`` and no cache. But PhiMoE kept its own (pre-4.56) mask code: ``_update_causal_mask`` builds
a mask over the whole sequence, with the window already applied, and the attention cuts it to the number of keys
from the left (``mask[..., :keys]``). Once the sequence is longer than the window, the cache holds the last keys
and the mask describes the first ones: every step from there attends with the wrong mask (silently wrong logits
and tokens, batched or not). Measured: 4.56.0 to 4.57.6; 4.55 keeps every key (full layers), 5.0 moved PhiMoE to
the shared mask functions that know the sliding layers. No upstream issue found.

Detection. A tiny PhiMoE with a window of 8, two rows of 7 tokens, 5 greedy new tokens: every step against a
no-cache forward of each row (step 2, the first past the window, is off by 0.05 without the patch).

Correction. PhiMoE gets full cache layers, as on 4.55, which its own mask (the window already in it) is written
for: an empty ``DynamicCache`` handed to ``PhimoeModel.forward`` has its empty sliding layers replaced by full
ones in place (generate() passes the same cache object on every step), and a forward that would build its own
cache is given a ``DynamicCache()`` of full layers. The cost is the 4.55 memory (every key is kept). Up to the
window the keys, and so the logits, are bitwise upstream's. A cache that already holds sliding keys (filled with
the patch off) has lost what the mask needs: it is left as upstream has it.
"""

from __future__ import annotations

import inspect
from typing import Any

TARGET = "transformers.models.phimoe.modeling_phimoe:PhimoeModel.forward"


def install(patcher: Any) -> None:
    patcher.require(TARGET, "past_key_values", "use_cache")
    patcher.wrap(TARGET, _full_layers)


def _full_layers(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    from transformers.cache_utils import DynamicCache, DynamicSlidingWindowLayer, DynamicLayer

    bound = inspect.signature(wrapped).bind_partial(*args, **kwargs).arguments
    cache, use_cache = bound.get("past_key_values"), bound.get("use_cache")
    use_cache = instance.config.use_cache if use_cache is None else use_cache
    if cache is None and use_cache and not (instance.gradient_checkpointing and instance.training):
        if "past_key_values" in kwargs or len(args) < 4:
            return wrapped(*args, **dict(kwargs, past_key_values=DynamicCache()))
    elif type(cache) is DynamicCache:
        for i, layer in enumerate(cache.layers):
            if isinstance(layer, DynamicSlidingWindowLayer) and cache.get_seq_length(i) == 0:
                cache.layers[i] = DynamicLayer()
    return wrapped(*args, **kwargs)


def probe() -> dict:
    from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad, tiny_model
    from hf_genfix.oracles.sliding import prompts

    model = tiny_model("phimoe", sliding_window=8)
    rows = prompts(7, 7, seed=5)
    ids, mask = left_pad(rows)  # equal lengths: no padding
    run = generate_steps(model, ids, mask, max_new_tokens=5, pad_token_id=0, eos_token_id=None)
    return check_rows_against_reference(model, rows, run, "phimoe (window 8), 2 rows of 7 tokens, 5 greedy tokens",
                                        eos_token_id=[])
