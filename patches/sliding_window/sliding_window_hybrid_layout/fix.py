"""sliding-window-hybrid-layout: on 4.52, ``cache_implementation="hybrid"`` on a model whose layers do not follow
``HybridCache``'s fixed layout (Mistral, Qwen-2/3, Phi-3, StarCoder-2: every layer, or another set, slides) is
silently wrong from the second generated token.

The defect. Up to 4.52 ``HybridCache`` does not ask the model which layers slide: it alternates them by
``config.sliding_window_pattern`` (2 when the config has none: layer 0 sliding, layer 1 full, ...), the layout of
Gemma-2. On 4.52 the models build each layer's mask from that cache, so a model whose own layers are laid out
otherwise attends with the wrong window on some layers: the sweep's cache-implementations scenario, second
generated token on, 0.41 (Qwen-2) to 0.81 (Phi-3) on Mistral, Phi-3, PhiMoE, Qwen-2, Qwen-2-MoE, Qwen-3, Qwen-3-MoE
and StarCoder-2 (the scan of 4.52.4, session 26; the same on 4.52.1). 4.51.3 is right with the same cache (its
models do not read the cache's layout), and 4.53 builds ``HybridCache`` from ``config.layer_types`` (a model without
them gets full layers, which is right). Gemma-2, Gemma-3 and Cohere-2, whose layouts the pattern describes, are
right on 4.52 too.

Detection (``probe``): the sweep's tiny Qwen-3 (window 8, its first layer full by ``max_window_layers``), two
10-token rows, 6 greedy tokens with ``cache_implementation="hybrid"``: every step against a no-cache forward.

Correction. ``GenerationMixin._get_cache`` is wrapped: a "hybrid" request is served as "static" (every layer keeps
every key; the model's own mask still applies its window, so a full cache is right for any layout, only larger)
unless the model's layers are known to slide exactly where the pattern says (``layers_that_slide``: the attention
modules' own ``sliding_window``, the config's ``layer_types``, the fixed layouts of Gemma-2/3 and Cohere-2), in
which case the request is upstream's.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.sliding_window.shared.layout import layers_that_slide
from hf_genfix.helpers.sliding_window import requested_cache, serve_cache
from hf_genfix.toolkit import recorder

GET_CACHE = "transformers.generation.utils:GenerationMixin._get_cache"

record = recorder(__name__)


def install(patcher: Any) -> None:
    patcher.require(GET_CACHE, "cache_implementation")
    patcher.wrap(GET_CACHE, _get_cache)


def _get_cache(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    if requested_cache(args, kwargs) != "hybrid" or _pattern_fits(instance):
        return wrapped(*args, **kwargs)
    if record.on:
        record.changed("cache_implementation 'hybrid' served as 'static' (the model's layers are not laid out as "
                       "HybridCache's pattern)")
    args, kwargs = serve_cache(args, kwargs, "static")
    return wrapped(*args, **kwargs)


def _pattern_fits(model: Any) -> bool:
    """Whether this release's ``HybridCache`` lays out the model's layers as the model does."""
    from hf_genfix.helpers.sliding_window import text_config

    text = text_config(model.config)
    if getattr(text, "sliding_window", None) is None:
        return True  # no window: upstream's answer to the request (an error, or a cache it can build)
    slides = layers_that_slide(model)
    if slides is None:
        return False  # unsure what the model does: a full cache is right whatever it does
    switch = getattr(text, "sliding_window_pattern", None) or 2  # HybridCache.__init__'s own default
    return slides == [bool((i + 1) % switch) for i in range(len(slides))]
