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

from hf_genfix.helpers.decode import forward_spec, name_positional
from hf_genfix.toolkit import recorder
from hf_genfix.toolkit.prepare_inputs import GENERIC, wrap_overrides
from hf_genfix.toolkit.tuple_caches import LegacyCacheView, legacy_tuples, tuple_style, written_for_past_key_values

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()


def install(patcher: Any) -> None:
    generic = patcher.require(GENERIC)
    # 5.24 renamed the keyword generate() passes the cache under (past_key_values -> cache).
    renamed = "cache" in inspect.signature(generic).parameters

    def prepare_inputs_for_generation(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if record.on:
            record.seen()
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
        if record.on:
            record.changed("%s given a 4.40-style view of its %s", type(instance).__name__,
                            type(real).__name__)
        return _for_forward(wrapped(*args, **kwargs), instance)

    wrap_overrides(patcher, prepare_inputs_for_generation, where=written_for_past_key_values)


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
