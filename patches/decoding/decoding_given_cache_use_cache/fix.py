"""decoding-given-cache-use-cache: from 4.54, generate() given a cache by the caller, on a model whose generation
config says ``use_cache=False``, feeds the whole sequence again from the second step into that cache (a shape
error on 4.54-5.1; silently wrong from the second generated token from 5.2).

The defect. A model's generation config takes ``use_cache`` from its config: ``False`` for MPT by default, and for
every checkpoint saved after training with gradient checkpointing (which sets ``config.use_cache = False``). A
caller who passes a cache (``past_key_values=``, a reused prefix cache, a second turn) asks for it to be continued.
5.2's decoding loop reads the flag, not the cache: the first step consumes the tokens after the cache through it,
and every later step slices the ids only ``if model_kwargs["use_cache"]`` (``next_sequence_length = 1 if use_cache
else None``), so the whole sequence is fed again and appended to the cache (MPT: ids of 14 tokens against a cache of
13, then 15 against 27). On 4.54-5.1 the same second step raises (MPT: its ids of 14 tokens against a mask of 17).
4.53 fails this call otherwise (its MPT cache has no layers), with the flag True too.

Detection (``probe``). The sweep's ``prefix-reuse`` scenario on its tiny MPT (config ``use_cache=False``): a prefix
cache from a forward, reused by ``generate()`` with the whole ids, every step against a no-cache forward (5.2.0
3.45, 5.12.0 1.91, 5.25.0 0.408 at the second step). Where it raises, the same scenario with ``use_cache=True``
passed by the caller decides: right, and the exception is this defect's loud form (4.54-5.1); failing too, and the
call fails for another reason (``ProbeSkipped``).

Correction. ``generate()`` is wrapped. Where the caller gives a ``Cache`` (``past_key_values=`` or, from 5.25,
``cache=``), says nothing of ``use_cache`` (no keyword, no ``generation_config``), and the model's generation config
says ``False``, the call gets ``use_cache=True``: the cache the caller handed over is used as a cache at every step.
A caller's own ``use_cache`` or ``generation_config``, a call without a cache and a cache that is not a ``Cache``
object are upstream's.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import recorder

GENERATE = "transformers.generation.utils:GenerationMixin.generate"
CACHE_NAMES = ("cache", "past_key_values")  # 5.25 renamed the keyword; the old one is still taken

record = recorder(__name__)


def install(patcher: Any) -> None:
    patcher.require(GENERATE)
    patcher.wrap(GENERATE, _generate)


def _generate(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    given = _cache_left_unused(instance, kwargs)
    if given is None:
        return record.through(wrapped, args, kwargs)
    if record.on:
        record.changed("use_cache=True for a call given a %s (the generation config says False)",
                       type(given).__name__)
    return wrapped(*args, **dict(kwargs, use_cache=True))


def _cache_left_unused(model: Any, kwargs: dict) -> Any:
    """The ``Cache`` the caller gave where upstream would not use it as one (no caller ``use_cache`` or
    ``generation_config``, the model's generation config saying False); None where the call is upstream's."""
    given = next((kwargs[name] for name in CACHE_NAMES if kwargs.get(name) is not None), None)
    if given is None or "use_cache" in kwargs or kwargs.get("generation_config") is not None:
        return None
    if getattr(getattr(model, "generation_config", None), "use_cache", True) is not False:
        return None
    from transformers.cache_utils import Cache

    return given if isinstance(given, Cache) else None  # a legacy tuple or a model's own state: upstream's
