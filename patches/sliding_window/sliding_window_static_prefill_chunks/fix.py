"""sliding-window-static-prefill-chunks: on 4.51-4.55, ``generate(prefill_chunk_size=k)`` into a static cache with
sliding layers is silently wrong once the prompt is longer than the window; the call is refused.

The defect. 4.51 brought chunked prefill (``GenerationMixin._prefill_chunking``: the prompt but its last token,
``k`` tokens per forward). A static cache whose sliding layers keep only the window (4.51-4.52's ``HybridCache``,
Gemma-2's, Gemma-3's and Cohere-2's default cache there, and ``SlidingWindowCache``; 4.53-4.55's ``HybridCache`` and
``SlidingWindowCache`` built of sliding layers) takes a chunk that lands past the window in a way its mask does
not describe: from the first generated token every logit is off (the sweep's chunked-prefill scenario: Gemma-2
0.344 on 4.51.3, 2.76 on 4.52.4, Cohere-2 0.0558, Gemma-3 2.24; a tiny Mistral with
``cache_implementation="sliding_window"`` 2.29-2.34 on 4.51-4.55; Gemma-2 with ``cache_implementation="hybrid"``
2.76 on 4.54-4.55). It needs more prompt than the window: with a window of 8, 9 tokens chunked (a 10-token prompt)
is wrong, 8 are right. A dynamic cache (Mistral's default, Gemma-2's from 4.53) and a cache without sliding layers
are right. 4.56 rewrote the static sliding layer (its own multi-token defect there is sliding-window-static-chunk);
4.57 on are right.

Detection (``probe``): a tiny Gemma-2 (window 8) with ``cache_implementation="hybrid"``, a 19-token prompt in chunks
of 5, 4 greedy tokens, every step against a no-cache forward of the row.

Correction: none is safe here, so the call is refused. ``_prefill_chunking`` is wrapped: when the cache generate()
handed it is a static one (not a ``DynamicCache``) with a sliding layer and the tokens it would chunk outnumber the
window, it raises ``SlidingStaticPrefillChunksUnsupported`` (a ValueError) naming the model, the release and the
switch, before any chunk runs. Everything else -- a dynamic cache, no sliding layer, a prompt within the window --
is upstream's call. Prefilling unchunked would be right, but it is not what a caller who bounds the prefill's
memory asked for: that choice is the caller's (drop ``prefill_chunk_size``, or use a dynamic cache).
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import env_name, recorder, signature

CHUNKING = "transformers.generation.utils:GenerationMixin._prefill_chunking"

record = recorder(__name__)


class SlidingStaticPrefillChunksUnsupported(ValueError):
    """Chunked prefill past the window into a static cache with sliding layers, on a release that gets it wrong."""


def install(patcher: Any) -> None:
    patcher.require(CHUNKING, "input_ids", "generation_config")
    patcher.wrap(CHUNKING, _prefill_chunking)


def _prefill_chunking(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    if record.on:
        record.seen()
    try:
        bound = signature(wrapped).bind(*args, **kwargs).arguments
    except TypeError:
        return wrapped(*args, **kwargs)
    ids = bound.get("input_ids")
    cache = (bound.get("model_kwargs") or {}).get("past_key_values")
    window = _window(instance)
    if ids is None or cache is None or window is None or ids.shape[-1] - 1 <= window or not _static_sliding(cache):
        return wrapped(*args, **kwargs)
    import transformers

    if record.on:
        record.changed("refused: %d prompt tokens chunked into a %s with a window of %d",
                       ids.shape[-1] - 1, type(cache).__name__, window)
    raise SlidingStaticPrefillChunksUnsupported(
        f"hf_genfix: {type(instance).__name__} with a {type(cache).__name__}: chunked prefill "
        f"(prefill_chunk_size) of a prompt longer than the sliding window ({ids.shape[-1]} tokens, window {window}) "
        f"is silently wrong on transformers {transformers.__version__} (the static sliding layers take a chunk past "
        f"the window that their mask does not describe), and hf_genfix cannot correct it safely on this release. "
        f"Drop prefill_chunk_size, use a dynamic cache (the model's default, or cache_implementation='dynamic'), "
        f"upgrade to transformers 4.57 or later, or set {env_name(record.patch_id)}=off for upstream's output.")


def _window(model: Any) -> int | None:
    from hf_genfix.helpers.sliding_window import text_config

    config = getattr(model, "config", None)
    window = getattr(text_config(config), "sliding_window", None) if config is not None else None
    return window if isinstance(window, int) and window > 0 else None


def _static_sliding(cache: Any) -> bool:
    """Whether ``cache`` is a static cache with at least one sliding layer (as 4.51-4.55 spell it)."""
    from transformers.cache_utils import DynamicCache

    if isinstance(cache, DynamicCache):
        return False
    if type(cache).__name__ == "SlidingWindowCache":
        return True
    for attribute in ("is_sliding", "is_sliding_list"):  # 4.53+ / 4.52 (a list), 4.51 (a tensor)
        flags = getattr(cache, attribute, None)
        if flags is not None:
            try:
                return any(bool(flag) for flag in flags)
            except TypeError:
                return False
    return any("Sliding" in type(layer).__name__ for layer in getattr(cache, "layers", None) or ())
