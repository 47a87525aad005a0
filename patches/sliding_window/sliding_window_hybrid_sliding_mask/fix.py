"""sliding-window-hybrid-sliding-mask: a model whose layers are ``"hybrid_sliding"`` (Inkling: linear attention
and sliding-window attention in one layer) is silently wrong from the first token with a static cache on 5.14-5.24:
its sliding layers get a full causal mask from generate().

The defect. For a compileable cache (``cache_implementation="static"``, and ``"sliding_window"``/``"hybrid"``,
which build the same ``StaticCache``), ``GenerationMixin.prepare_inputs_for_generation`` builds the 4-D masks
itself with ``masking_utils.create_masks_for_generate``, one per kind of layer, from the table
``LAYER_PATTERN_TO_MASK_FUNCTION_MAPPING``. There ``"hybrid_sliding"`` maps its ``"sliding_attention"`` mask to
``create_causal_mask`` (transformers 5.24.0 ``masking_utils.py:1539``; 5.14.0, which added Inkling and the entry,
line 1487), not ``create_sliding_window_causal_mask``. The model takes the prepared dict as final, so its sliding
layers attend to every earlier token of a prompt longer than the window, where a no-cache forward (the model
builds its own masks) keeps to the window: the prefill itself is wrong (0.0242 on the sweep's tiny inkling_text,
window 8, 10-token prompt) and every later step with it. A dynamic cache is right (the model builds the masks).
5.25.0 maps it to ``create_sliding_window_causal_mask``.

Detection. A tiny inkling_text with a window of 8 (both layers ``"hybrid_sliding"``), a 10-token prompt, 6 greedy
tokens with ``cache_implementation="static"``: every step against a no-cache forward of the row.

Correction. ``create_masks_for_generate`` as ``transformers.generation.utils`` calls it is wrapped: when the
text config's ``layer_types`` hold ``"hybrid_sliding"``, it has a window, and the table still maps that kind's
sliding mask to ``create_causal_mask``, the ``"sliding_attention"`` mask of upstream's dict is replaced by the one
``create_sliding_window_causal_mask`` builds from the same arguments (what 5.25.0 does). Every other config, and
every other mask of the dict, is upstream's.
"""

from __future__ import annotations

import inspect
from typing import Any

from hf_genfix.toolkit import recorder

TARGET = "transformers.generation.utils:create_masks_for_generate"

record = recorder(__name__)

# create_masks_for_generate's arguments that it forwards to its mask functions (its mask_kwargs), besides the config;
# "past_key_values" up to 5.22, "cache" from 5.23 (the old name deprecated)
_FORWARDED = ("inputs_embeds", "attention_mask", "cache", "past_key_values", "position_ids", "or_mask_function",
              "and_mask_function", "block_sequence_ids")


def install(patcher: Any) -> None:
    patcher.require(TARGET, "config", "inputs_embeds", "attention_mask", "position_ids")
    patcher.wrap(TARGET, _create_masks_for_generate)


def _wrong_table() -> bool:
    from transformers import masking_utils

    entry = getattr(masking_utils, "LAYER_PATTERN_TO_MASK_FUNCTION_MAPPING", {}).get("hybrid_sliding")
    return isinstance(entry, dict) and entry.get("sliding_attention") is masking_utils.create_causal_mask


def _create_masks_for_generate(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    masks = wrapped(*args, **kwargs)
    if not isinstance(masks, dict) or "sliding_attention" not in masks:
        return masks
    try:
        bound = inspect.signature(wrapped).bind(*args, **kwargs)
    except TypeError:
        return masks
    bound.apply_defaults()
    config = bound.arguments.get("config")
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    if ("hybrid_sliding" not in (getattr(text, "layer_types", None) or ())
            or getattr(text, "sliding_window", None) is None or not _wrong_table()):
        return masks
    if record.on:
        record.seen()
    from transformers import masking_utils

    sliding = masking_utils.create_sliding_window_causal_mask
    takes = inspect.signature(sliding).parameters
    mask_kwargs = {name: bound.arguments[name] for name in _FORWARDED if name in bound.arguments and name in takes}
    masks = dict(masks)
    masks["sliding_attention"] = sliding(config=text, **mask_kwargs)
    if record.on:
        record.changed("sliding_attention mask of a hybrid_sliding model built with its window (%s)",
                       text.sliding_window)
    return masks
