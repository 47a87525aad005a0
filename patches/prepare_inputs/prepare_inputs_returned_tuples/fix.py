"""prepare-inputs-returned-tuples: on 4.54 - 4.55 a model that returns its cache as legacy tuples cannot take them
back through its own ``prepare_inputs_for_generation``.

The defect. 4.54 moved CTRL, RoCBert, XLM-RoBERTa-XL and MusicGen-Melody's forwards onto ``Cache`` objects but kept
the old return type: a forward called without a ``Cache`` (the first step of a hand-written loop passes None)
builds one, and hands it back converted to legacy tuples (``return_legacy_cache``, "deprecated ... removed in
v4.58"). The same release rewrote these models' own ``prepare_inputs_for_generation`` to read
``past_key_values.get_seq_length()``, which a tuple does not have. So a loop that feeds the cache the model
returned back into the model's own preparation, as every decoding loop does, fails at its second step:
``AttributeError: 'tuple' object has no attribute 'get_seq_length'`` (modeling_ctrl.py:565 on 4.54.1). Measured
with the sweep's tiny CTRL (manual-loop): 4.53.x reads ``past_key_values[0][0].shape[2]`` (no defect); 4.54.0 -
4.55.4 raise; 4.56.0 fixed it upstream (the forward returns the ``DynamicCache`` it built). ``generate()`` itself
is spared: it converts a given tuple cache before its first step.

Detection (``probe``): the sweep's manual loop on a tiny CTRL, a left-padded batch, each step
``prepare_inputs_for_generation(whole ids, past_key_values=<the cache forward returned>, attention_mask=mask)``
then forward; every step's logits against a no-cache forward of each unpadded row.

Correction. Wrapped: the own ``prepare_inputs_for_generation`` of transformers' model classes whose code reads
``get_seq_length`` and whose module converts its cache back to tuples (a function there has a
``return_legacy_cache`` local). Only a call given a plain tuple of per-layer tuples is changed: the override gets
the same tuple with ``get_seq_length()`` added (the positions it holds, read as ``helpers.decode.cache_length``
reads a legacy cache), and wherever the returned inputs carry that view, the caller's own tuple is put back, so
forward receives exactly what it would have without hf_genfix. A ``Cache``, None, or any other value goes through
untouched, as does every call to an override that reads the tuple itself.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from hf_genfix.helpers.decode import cache_length, name_positional
from hf_genfix.toolkit import recorder
from hf_genfix.toolkit.prepare_inputs import GENERIC, wrap_overrides

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()


class ReturnedTuples(tuple):
    """A legacy tuple cache that also answers ``get_seq_length()``: the one read 4.54's overrides make of it."""

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return cache_length(tuple(self))


def install(patcher: Any) -> None:
    patcher.require(GENERIC)

    def prepare_inputs_for_generation(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if record.on:
            record.seen()
        if instance is None:
            return record.through(wrapped, args, kwargs)
        named_args, named = name_positional(wrapped, args, kwargs)
        given = named.get("past_key_values")
        if not _legacy_tuples(given):
            return record.through(wrapped, args, kwargs)
        view = named["past_key_values"] = ReturnedTuples(given)
        if record.on:
            record.changed("%s given its returned tuple cache with get_seq_length()", type(instance).__name__)
        inputs = wrapped(*named_args, **named)
        if isinstance(inputs, dict):
            for key, value in inputs.items():
                if value is view:
                    inputs[key] = given  # forward gets the caller's own tuple, as without hf_genfix
        return inputs

    wrap_overrides(patcher, prepare_inputs_for_generation, where=_reads_length_of_returned_tuples)


def _legacy_tuples(cache: Any) -> bool:
    """A plain legacy cache: a non-empty tuple of per-layer tuples or lists (what ``to_legacy_cache()`` returns)."""
    return type(cache) is tuple and bool(cache) and all(isinstance(layer, (tuple, list)) for layer in cache)


def _reads_length_of_returned_tuples(cls: type) -> bool:
    """Transformers' own override that reads ``get_seq_length`` in a module whose forward returns legacy tuples."""
    own = inspect.unwrap(vars(cls).get("prepare_inputs_for_generation"))
    module = getattr(own, "__module__", None) or ""
    code = getattr(own, "__code__", None)
    if not module.startswith("transformers.models.") or code is None or "get_seq_length" not in code.co_names:
        return False
    return _returns_legacy_tuples(sys.modules.get(module))


def _returns_legacy_tuples(module: Any) -> bool:
    """Does a function of ``module`` (a model class's method) keep a ``return_legacy_cache`` flag, upstream's mark
    of a forward that hands back as tuples the ``Cache`` it built?"""
    for holder in vars(module).values() if module is not None else ():
        if not inspect.isclass(holder) or holder.__module__ != module.__name__:
            continue
        for member in vars(holder).values():
            code = getattr(inspect.unwrap(member), "__code__", None) if callable(member) else None
            if code is not None and "return_legacy_cache" in code.co_varnames:
                return True
    return False
