"""sliding-window-hybrid-cache: up to 4.55, ``cache_implementation="sliding_window"`` on a model that mixes
sliding and full-attention layers makes the full-attention layers sliding too.

The defect. ``generate(cache_implementation="sliding_window")`` builds a ``SlidingWindowCache``: every layer
holds only the last ``sliding_window`` tokens and reports sliding mask sizes. That is right for Mistral (every
layer slides) but not for Gemma-2/3, Cohere-2 or Qwen-2/3 with ``max_window_layers``, whose full-attention layers
then silently forget everything before the window: no error, logits off by 0.003-0.16 on tiny models from the
second generated token on, and different tokens (4.46.3, 4.53.3, 4.54.0, 4.55.4 measured). From 4.56 every
static cache is built from ``config.layer_types`` (upstream PR 40276), and the same request gives full layers
where the model has them.

The same holds where a config carries a window that none of its layers uses (SmolLM3 with
``use_sliding_window`` and ``max_window_layers`` at or above its depth: every layer full by its ``layer_types``;
found by the sweep's cache-implementations scenario on 4.53-4.55, 0.781 from the second token): every layer
forgets.

Detection. ``probe()``: a tiny Gemma-2 (sliding, full; window 8), a 12-token prompt, greedy generation with
``cache_implementation="sliding_window"``, every step against one no-cache forward of the final sequence.

Correction. ``GenerationMixin._get_cache`` (where generate turns the name into a cache) is wrapped: when any layer
of the model attends fully (``layers_that_slide``: its attention modules' own ``sliding_window``, else the config's
``layer_types``, else the fixed layouts of Gemma-2/3 and Cohere-2; unsure otherwise, and then upstream's),
"sliding_window" is served as "hybrid" -- sliding layers keep the window, full layers keep everything, which is
what 4.56 does. That needs the release's ``HybridCache`` to know the layout: it reads ``config.layer_types`` from
4.53 on and is Gemma-2's alternation before; any other such config on an older release gets "static" (every layer
full: correct, only larger: a full cache is never wrong, the model's mask still applies its window). So does a model
whose layers share keys and values (Gemma-3n): its sharing layers cannot read a HybridCache's window right on these
releases (``model-gemma3n-hybrid-cache``). Models whose every layer slides keep the
``SlidingWindowCache`` they asked for.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.sliding_window.shared.layout import layers_that_slide
from hf_genfix.helpers.sliding_window import requested_cache, serve_cache
from hf_genfix.toolkit import recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

GET_CACHE = "transformers.generation.utils:GenerationMixin._get_cache"


def install(patcher: Any) -> None:
    patcher.require(GET_CACHE, "cache_implementation")
    patcher.wrap(GET_CACHE, _get_cache)


def _get_cache(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    requested = requested_cache(args, kwargs)
    if requested == "sliding_window":
        served = _serve_as(instance)
        if served != requested:
            if record.on:
                record.changed("cache_implementation %r served as %r", requested, served)
            args, kwargs = serve_cache(args, kwargs, served)
    return wrapped(*args, **kwargs)


def _serve_as(model: Any) -> str:
    from hf_genfix.helpers.sliding_window import text_config

    text = text_config(model.config)
    if getattr(text, "sliding_window", None) is None:
        return "sliding_window"  # no window to keep: upstream's own answer to the request
    if int(getattr(text, "num_kv_shared_layers", 0) or 0) > 0:
        # Gemma-3n (4.53-4.55): its KV-sharing layers read a HybridCache's window by clamped positions, so a call of
        # several tokens past the window reads the wrong keys (model-gemma3n-hybrid-cache), and 4.54's HybridCache
        # lacks the ``sliding_window`` they read (AttributeError). Serving "hybrid" turned upstream's IndexError into
        # a silently wrong answer on 4.53 (0.397 on the loud tiny model) and into another error on 4.54 (sweep
        # --differential, session 30). A full cache is right on all three (2e-06).
        return "static"
    slides = layers_that_slide(model)
    if slides is None or all(slides):
        # Every layer slides (Mistral, 4.55's Qwen-3-MoE): the cache asked for fits the model. Or we cannot tell:
        # upstream's cache (a full one would be right too, but neither bitwise upstream's nor as small).
        return "sliding_window"
    # A full-attention layer: the hybrid models, and a config with a window that no layer uses (SmolLM3).
    # HybridCache follows layer_types (4.53+) or hard-codes Gemma-2's alternation (before).
    if getattr(text, "layer_types", None) or getattr(text, "model_type", "") == "gemma2":
        return "hybrid"
    return "static"
