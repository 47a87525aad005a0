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
not iterable``) is returned as None, as 4.x never called it then. Models without their own ``_reorder_cache``,
every model that is not remote code, and an instance that has a ``_reorder_cache`` of its own are passed through.

Threads. The instance attribute is the one place ``generate()`` looks, so another thread using the same model
sees it while a beam search runs. What it sees is the model's own method for everything but a ``Cache`` (which
that method cannot take), and the model's own method outright in a thread where this patch is ``disabled()``.
The attribute stays while any beam search on that instance runs (counted per instance): taken off when the first
of two concurrent beam searches finished, the second one's next step would get the model's own method again
and crash."""

from __future__ import annotations

import threading
import weakref
from typing import Any

from hf_genfix.toolkit import recorder, reset_in_child
from hf_genfix.toolkit.remote_code import is_remote

record = recorder(__name__)
BEAM_SEARCH = "transformers.generation.utils:GenerationMixin._beam_search"


def _own_reorder(cls: type) -> bool:
    return any(is_remote(c) and "_reorder_cache" in vars(c) for c in cls.__mro__)


# Model instance -> how many beam searches on it run now with our ``_reorder_cache`` in place.
_RUNNING: "weakref.WeakKeyDictionary[Any, int]" = weakref.WeakKeyDictionary()
_LOCK = reset_in_child(threading.Lock())


def install(patcher: Any) -> None:
    def beam_search(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if instance is None or not _own_reorder(type(instance)):
            return record.through(wrapped, args, kwargs)
        with _LOCK:
            running = _RUNNING.get(instance, 0)
            ours = running > 0 or "_reorder_cache" not in vars(instance)  # else the user's own: left alone
            if ours:
                if not running:
                    vars(instance)["_reorder_cache"] = _dispatch(instance._reorder_cache, patcher)
                _RUNNING[instance] = running + 1
        if not ours:
            return wrapped(*args, **kwargs)
        try:
            return wrapped(*args, **kwargs)
        finally:
            with _LOCK:
                left = _RUNNING.pop(instance) - 1
                if left:
                    _RUNNING[instance] = left
                else:
                    vars(instance).pop("_reorder_cache", None)

    patcher.wrap(BEAM_SEARCH, beam_search)


def _dispatch(own: Any, patcher: Any) -> Any:
    """The model's own tuple-era ``_reorder_cache`` ``own`` behind 4.53's dispatch."""

    def _reorder_cache(past_key_values: Any, beam_idx: Any) -> Any:
        if not patcher.on():  # a thread where this patch is disabled() gets the model's own method
            return own(past_key_values, beam_idx)
        if past_key_values is None:  # use_cache=False: 5.18 - 5.23 call it with the None entry
            return None
        if isinstance(past_key_values, (tuple, list)) or not hasattr(past_key_values, "reorder_cache"):
            return own(past_key_values, beam_idx)
        past_key_values.reorder_cache(beam_idx)
        return past_key_values

    return _reorder_cache
