"""model-phimoe-sliding-cache, model-qwen2-moe-sliding-cache: silently wrong past the sliding window on 4.56-4.57.

The defect. 4.56 made ``DynamicCache(config=...)`` build a ``DynamicSlidingWindowLayer`` for every layer of a
model whose config has a ``sliding_window``: such a layer keeps only the last ``window - 1`` keys and returns them
with the new ones. ``generate()`` builds its cache that way, and so does the model's forward when it is called
with ``use_cache=True`` and no cache. But PhiMoE and Qwen2-MoE kept their own (pre-4.56) mask code:
``_update_causal_mask`` builds a mask over the whole sequence, with the window already applied, and the attention
cuts it to the number of keys from the left (``mask[..., :keys]``). Once the sequence is longer than the window,
the cache holds the last keys and the mask describes the first ones: every step from there attends with the wrong
mask (silently wrong logits and tokens, batched or not). Measured: 4.56.0 to 4.57.6; 4.55 keeps every key (full
layers), 5.0 moved both models to the shared mask functions that know the sliding layers. One manifest per model
(a PhiMoE user never imports the Qwen2-MoE module). No upstream issue found.

Detection. The tiny model with a window of 8 (Qwen2-MoE: ``use_sliding_window=True``), two rows of 7 tokens, 5
greedy new tokens: every step against a no-cache forward of each row (step 2, the first past the window, is off
by 0.02-0.03 without the patch).

Correction. The model gets full cache layers, as on 4.55, which its own mask (the window already in it) is
written for: an empty ``DynamicCache`` handed to the base model's forward has its empty sliding layers replaced by full
ones in place (generate() passes the same cache object on every step), and a forward that would build its own
cache is given a ``DynamicCache()`` of full layers. The cost is the 4.55 memory (every key is kept). Up to the
window the keys, and so the logits, are bitwise upstream's. A cache that already holds sliding keys (filled with
the patch off) has lost what the mask needs: it is left as upstream has it.
"""

from __future__ import annotations

import inspect
from typing import Any

PHIMOE = "transformers.models.phimoe.modeling_phimoe:PhimoeModel.forward"
QWEN2_MOE = "transformers.models.qwen2_moe.modeling_qwen2_moe:Qwen2MoeModel.forward"


def install_phimoe(patcher: Any) -> None:
    _install(patcher, PHIMOE)


def install_qwen2_moe(patcher: Any) -> None:
    _install(patcher, QWEN2_MOE)


def _install(patcher: Any, target: str) -> None:
    patcher.require(target, "past_key_values", "use_cache")
    patcher.wrap(target, _full_layers)


def _full_layers(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    from transformers.cache_utils import DynamicCache, DynamicSlidingWindowLayer, DynamicLayer

    bound = inspect.signature(wrapped).bind_partial(*args, **kwargs).arguments
    cache, use_cache = bound.get("past_key_values"), bound.get("use_cache")
    use_cache = instance.config.use_cache if use_cache is None else use_cache
    if cache is None and use_cache and not (getattr(instance, "gradient_checkpointing", False) and instance.training):
        if "past_key_values" in kwargs or len(args) < 4:
            return wrapped(*args, **dict(kwargs, past_key_values=DynamicCache()))
    elif type(cache) is DynamicCache:
        for i, layer in enumerate(cache.layers):
            if isinstance(layer, DynamicSlidingWindowLayer) and cache.get_seq_length(i) == 0:
                cache.layers[i] = DynamicLayer()
    return wrapped(*args, **kwargs)


def probe_phimoe() -> dict:
    return _probe("phimoe")


def probe_qwen2_moe() -> dict:
    # The tiny defaults give 17M parameters: fewer and smaller experts (the defect is in the attention's mask).
    return _probe("qwen2_moe", use_sliding_window=True, max_window_layers=0, num_experts=4, num_experts_per_tok=2,
                  moe_intermediate_size=16, shared_expert_intermediate_size=16)


def _probe(model_type: str, **overrides: Any) -> dict:
    from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad, tiny_model
    from hf_genfix.oracles.sliding import prompts

    model = tiny_model(model_type, sliding_window=8, **overrides)
    rows = prompts(7, 7, seed=5)
    ids, mask = left_pad(rows)  # equal lengths: no padding
    run = generate_steps(model, ids, mask, max_new_tokens=5, pad_token_id=0, eos_token_id=None)
    return check_rows_against_reference(model, rows, run, f"{model_type} (window 8), 2 rows of 7 tokens, 5 greedy "
                                        "tokens", eos_token_id=[])
