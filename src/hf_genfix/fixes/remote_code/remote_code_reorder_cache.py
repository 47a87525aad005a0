"""remote-code-reorder-cache: beam search with an old remote-code model crashes on the cache it reorders.

The defect. Old remote-code models define their own ``_reorder_cache(past_key_values, beam_idx)`` for tuple
caches: it iterates ``(key, value)`` per layer and returns new tuples (old Phi-3, DeepSeek-V2, MiniCPM,
InternLM2, ChatGLM2/3 all ship one). Up to 4.53 ``generate()`` called it only for tuple caches
(``_temporary_reorder_cache``) and reordered a ``Cache`` with its own ``reorder_cache``. From 4.54.0 beam search
calls the model's ``_reorder_cache`` whenever the model has one, with the ``DynamicCache`` it holds: the old
method turns it into tuples (4.54 - 4.57, the next forward then gets a plain ``DynamicCache`` rebuilt from them,
without the old API the remote-code patches serve) or fails on the layers it iterates (5.x). Measured with the
tiny families of ``hf_genfix.oracles.legacy_models``, ``num_beams=2`` against the same beam search without a
cache, hf_genfix's other remote-code patches in place: 4.46.3 and 4.53.3 equal for all five families; 4.54.0
and 4.57.6 ``AttributeError: 'DynamicCache' object has no attribute 'get_usable_length'`` (phi3, deepseek,
minicpm); 5.0.0 ``'NoneType' object has no attribute 'index_select'`` (phi3, deepseek, minicpm); 5.24.0 the
same for four families and ``ValueError: too many values to unpack`` for chatglm3.

Detection (``probe``): beam search on the tiny Phi-3-style remote repo must give the sequences of beam search
without a cache.

Correction. While ``_beam_search`` runs on a model whose remote-code class defines ``_reorder_cache``, the
instance gets a ``_reorder_cache`` with 4.53's dispatch: a ``Cache`` is reordered in place by its own
``reorder_cache`` and returned; tuples still go to the model's own method, and no cache at all
(``use_cache=False``, which 5.18 - 5.23 hand to the method as None: ChatGLM's ``TypeError: 'NoneType' object is
not iterable``) is returned as None, as 4.x never called it then. Taken off the instance afterwards;
models without their own ``_reorder_cache``, and every model that is not remote code, are passed through.
"""

from __future__ import annotations

from typing import Any

from ._remote_code import is_remote

BEAM_SEARCH = "transformers.generation.utils:GenerationMixin._beam_search"


def _own_reorder(cls: type) -> bool:
    return any(is_remote(c) and "_reorder_cache" in vars(c) for c in cls.__mro__)


def install(patcher: Any) -> None:
    def beam_search(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if instance is None or "_reorder_cache" in vars(instance) or not _own_reorder(type(instance)):
            return wrapped(*args, **kwargs)
        own = instance._reorder_cache

        def _reorder_cache(past_key_values: Any, beam_idx: Any) -> Any:
            if past_key_values is None:  # use_cache=False: 5.18 - 5.23 call it with the None entry
                return None
            if isinstance(past_key_values, (tuple, list)) or not hasattr(past_key_values, "reorder_cache"):
                return own(past_key_values, beam_idx)
            past_key_values.reorder_cache(beam_idx)
            return past_key_values

        vars(instance)["_reorder_cache"] = _reorder_cache
        try:
            return wrapped(*args, **kwargs)
        finally:
            vars(instance).pop("_reorder_cache", None)

    patcher.wrap(BEAM_SEARCH, beam_search)


def probe() -> dict[str, Any]:
    from hf_genfix.oracles.legacy_models import check_family_beam

    return check_family_beam("phi3")
