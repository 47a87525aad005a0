"""legacy-cache: ``prepare_inputs_for_generation`` overrides written for the 4.40 cache API break on later releases.

The defect. Remote-code models (and user subclasses) copied the override transformers 4.40 shipped: it reads
``past_key_values.seen_tokens`` and ``past_key_values.get_max_length()``, indexes ``past_key_values[0][0]``
for tuple caches, and knows the cache only as ``past_key_values``. Measured with such a model loaded with
``trust_remote_code=True`` (tests/prepare_inputs), in ``generate()`` and in a manual loop:

- 4.46.3: works (both names still exist, with deprecation warnings);
- 4.53.3: ``AttributeError: 'DynamicCache' object has no attribute 'get_max_length'``;
- 4.57.6 .. 5.13.0: ``AttributeError: ... no attribute 'seen_tokens'``;
- 5.13+: ``get_max_length()`` is back with another meaning, -1 for caches without a bound, so code that crops
  the mask to ``-max_cache_length`` columns drops the first column (the AttributeError above hides it until
  5.24, where ``seen_tokens`` is still missing);
- 5.24.0: ``generate()`` passes the cache as ``cache=``; the override finds ``past_key_values`` None, returns no
  cache and the whole sequence, and every step recomputes everything (right tokens, no cache).

Detection (``probe``): a tiny Llama whose override is that 4.40 code, defined outside transformers as remote
code is; a greedy left-padded ``generate()`` must match the reference at every step, and each decode step must
reach forward with one token and a cache holding the sequence so far.

Correction. Overrides defined outside transformers whose signature names ``past_key_values`` but not ``cache``
are wrapped (also those of classes created later, through ``wrap_subclasses``). The cache they are given
(under either name) is a ``LegacyCacheView``: a transparent proxy (``isinstance`` still holds) that adds what
the 4.40 code reads -- ``seen_tokens``, ``get_max_length()`` (None for a cache without a bound, as in 4.40),
``get_usable_length()``, ``to_legacy_cache()``, tuple indexing and iteration ``(key, value)`` per layer, and a
truth value that says whether it holds anything. Nothing is aliased on the cache classes themselves, so code
that knows the 5.13+ ``get_max_length()`` keeps its meaning. In the returned inputs the view is replaced by the
real cache, under the keyword the model's forward takes, and position ids that the old code passed through at
full length (``generate()`` builds them from 5.3) are cut to the new tokens. Remote overrides written before the
Cache classes (their module imports none and indexes ``past_key_values[0][0]``: InternLM2's first releases,
ChatGLM3) get what 4.3x passed instead, None while the cache is empty and the per-layer tuples after
(``remote-code-cache-api`` translates their forward). A cache passed as ``cache=`` is taken on every release.
"""

from __future__ import annotations

import inspect
from typing import Any

import wrapt

from hf_genfix.helpers.decode import cache_length, forward_spec, name_positional
from hf_genfix import _record
from ._prepare_inputs_family import GENERIC, wrap_overrides



class LegacyCacheView(wrapt.ObjectProxy):
    """A cache as a 4.40-era ``prepare_inputs_for_generation`` reads it; everything else goes to the cache."""

    @property
    def seen_tokens(self) -> int:
        return cache_length(self.__wrapped__)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.__wrapped__.get_seq_length(layer_idx)

    def get_max_length(self) -> int | None:
        # 4.40 meaning: the capacity of a bounded (static) cache, None when it grows without bound.
        real = self.__wrapped__
        if getattr(real, "is_compileable", None) is False:
            return None
        for name in ("get_max_cache_shape", "get_max_length"):
            method = getattr(type(real), name, None)
            if method is not None:
                value = method(real)
                return int(value) if value is not None and value >= 0 else None
        return None

    def get_usable_length(self, new_seq_length: int, layer_idx: int = 0) -> int:
        max_length = self.get_max_length()
        previous = self.__wrapped__.get_seq_length(layer_idx)
        if max_length is not None and previous + new_seq_length > max_length:
            return max_length - new_seq_length
        return previous

    def __getitem__(self, layer_idx: int) -> tuple[Any, Any]:
        layers = getattr(self.__wrapped__, "layers", None)
        if layers is not None:
            layer = layers[layer_idx]
            return layer.keys, layer.values
        return self.__wrapped__[layer_idx]

    def __len__(self) -> int:
        # 4.40: the number of layers holding states, 0 for an empty cache (hence `if past_key_values:`).
        if cache_length(self.__wrapped__) == 0:
            return 0
        layers = getattr(self.__wrapped__, "layers", None)
        return len(layers) if layers is not None else len(self.__wrapped__)

    def __bool__(self) -> bool:
        return cache_length(self.__wrapped__) > 0

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def to_legacy_cache(self) -> tuple:
        return tuple(self[i] for i in range(len(self)))

    # 4.36 - 4.55 kept the states in two lists, which old attention code reads (``key_cache[layer_idx]``).
    @property
    def key_cache(self) -> list:
        return self._states("key_cache", 0)

    @property
    def value_cache(self) -> list:
        return self._states("value_cache", 1)

    def _states(self, name: str, which: int) -> list:
        real = self.__wrapped__
        if getattr(real, "layers", None) is None:
            return getattr(real, name)
        return [self[i][which] for i in range(len(self))]


def legacy_tuples(cache: Any, cls: type | None = None) -> tuple | None:
    """``cache`` as the 4.3x tuple of per-layer pasts in the layout the forward of ``cls`` returned them
    (``_tuple_layout``); None while it holds nothing (as 4.3x passed). A cache that holds positions for a class
    whose layout was never seen raises ``LayoutUnknown``: handing it over in some layout would be a guess."""
    from hf_genfix.fixes.remote_code._tuple_layout import known, mismatch

    if cache_length(cache) == 0:
        return None
    view = LegacyCacheView(cache)
    layout = known(cls, cache) if cls is not None else None
    if layout is None:
        if cls is None:
            return view.to_legacy_cache()
        raise mismatch(cls, "the cache holds positions but the model's own tuple layout was never seen (it is "
                            "recognised from the tuples its forward returns, which remote-code-cache-api reads)")
    return tuple(layout.to_model(key, value) for key, value in view)


def tuple_style(cls: type) -> bool:
    """Remote code written before the Cache classes (4.35 and earlier, InternLM2's first releases, ChatGLM3): its
    module imports no Cache class and indexes ``past_key_values[0][0]`` as tensors."""
    from hf_genfix.fixes.remote_code._remote_code import is_remote, module_globals, uses

    if not is_remote(cls) or not uses(cls, TUPLE_CACHES):
        return False
    try:
        from transformers.cache_utils import Cache
    except ImportError:  # pragma: no cover - every release measured has it
        return True
    return not any(isinstance(v, type) and issubclass(v, Cache) for v in module_globals(cls).values())


TUPLE_CACHES = "tuple caches (past_key_values[0][0])"


def install(patcher: Any) -> None:
    generic = patcher.require(GENERIC)
    # 5.24 renamed the keyword generate() passes the cache under (past_key_values -> cache).
    renamed = "cache" in inspect.signature(generic).parameters

    def prepare_inputs_for_generation(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if _record.on:
            _record.seen("legacy-cache")
        if instance is None:
            return wrapped(*args, **kwargs)
        args, kwargs = name_positional(wrapped, args, kwargs)
        real = kwargs.get("past_key_values")
        if real is None and (renamed or "cache" in kwargs):
            # 5.24 passes the cache as `cache=`; so do loops written for it, and so does the prepare-inputs
            # patch's translation when it wraps outside this one (the nesting follows installation order).
            real = kwargs.pop("cache", None)
        if real is None or isinstance(real, (tuple, list)) or isinstance(real, LegacyCacheView):
            return wrapped(*args, **kwargs)
        if tuple_style(type(instance)):
            # Tuple-era code (InternLM2, ChatGLM3) reads past_key_values[0][0].shape: it gets what 4.3x passed,
            # None before the first forward and the tuples after; forward gets the real cache back
            # (remote-code-cache-api translates it there).
            legacy = kwargs["past_key_values"] = legacy_tuples(real, type(instance))
            inputs = wrapped(*args, **kwargs)
            if isinstance(inputs, dict) and inputs.get("past_key_values") is legacy:
                inputs["past_key_values"] = real
            return _for_forward(inputs, instance)
        kwargs["past_key_values"] = LegacyCacheView(real)
        if _record.on:
            _record.changed("legacy-cache", "%s given a 4.40-style view of its %s", type(instance).__name__,
                            type(real).__name__)
        return _for_forward(wrapped(*args, **kwargs), instance)

    wrap_overrides(patcher, prepare_inputs_for_generation, where=_written_for_past_key_values)


def _written_for_past_key_values(cls: type) -> bool:
    method = vars(cls).get("prepare_inputs_for_generation")
    module = getattr(method, "__module__", None) or ""
    if module == "transformers" or module.startswith("transformers."):
        return False
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False
    return "past_key_values" in params and "cache" not in params


def _for_forward(inputs: Any, model: Any) -> Any:
    """The real cache back in the returned inputs, under forward's keyword; positions cut to the new tokens."""
    if not isinstance(inputs, dict):
        return inputs
    for key, value in list(inputs.items()):
        if isinstance(value, LegacyCacheView):
            inputs[key] = value.__wrapped__
    key = forward_spec(model).cache_key
    if key != "past_key_values" and "past_key_values" in inputs and inputs.get(key) is None:
        inputs[key] = inputs.pop("past_key_values")
    positions, ids = inputs.get("position_ids"), inputs.get("input_ids")
    if positions is not None and ids is not None and positions.ndim == 2 and positions.shape[-1] > ids.shape[-1]:
        inputs["position_ids"] = positions[:, -ids.shape[-1]:]
    return inputs


def probe() -> dict[str, Any]:
    from hf_genfix.oracles.legacy import check_legacy_generate, legacy_model_class
    from hf_genfix.oracles.tiny import tiny_model

    return check_legacy_generate(tiny_model("llama", model_class=legacy_model_class()))
