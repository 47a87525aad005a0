"""Which decoder layers of a model slide, as the model itself computes it: what sliding-window-hybrid-cache and
sliding-window-hybrid-layout compare a named cache's layout with."""

from __future__ import annotations

from typing import Any


def layers_that_slide(model: Any) -> "list[bool] | None":
    """Whether each decoder layer's attention slides, as the model itself computes it: the ``sliding_window`` its
    attention modules hold (None on a full layer) where every one of them has the attribute; else the config's
    explicit ``layer_types`` (4.53+); else the layouts that predate it and are fixed by the model type (Gemma-2's
    alternation, Gemma-3's and Cohere-2's pattern). None when unsure: 4.55's Qwen-2-MoE and Qwen-3-MoE have no
    layer_types and slide every layer whatever max_window_layers says (so does 4.46's Qwen-2 in its eager mask)."""
    from hf_genfix.helpers.sliding_window import WINDOWED_KINDS, SlidingWindowPolicy, text_config

    attention = [module for name, module in model.named_modules() if name.endswith("self_attn")]
    if attention and all(hasattr(module, "sliding_window") for module in attention):
        return [module.sliding_window is not None for module in attention]
    text = text_config(model.config)
    if not getattr(text, "layer_types", None) and getattr(text, "model_type", "") not in (
        "gemma2", "gemma3_text", "cohere2"
    ):
        return None
    return [kind in WINDOWED_KINDS for kind in SlidingWindowPolicy.layer_types(model.config)]
