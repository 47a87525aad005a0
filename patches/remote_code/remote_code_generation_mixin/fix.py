"""remote-code-generation-mixin: a remote model loaded a second time in a process has no ``generate`` (5.5+).

The defect. Remote classes written before 4.45 inherit ``generate`` from ``PreTrainedModel``; since 4.50 it does
not give it, and the auto classes load such a class as a copy with ``GenerationMixin`` added
(``add_generation_mixin_to_remote_model``). They also register the original class (without the mixin) for the
repo's config class. From 5.5.0 a later ``from_config`` / ``from_pretrained`` of the same repo in the same process
takes that registered class as "explicit local code" and skips the copy: ``'InternLM2ForCausalLM' object has no
attribute 'generate'``, and the patches that are set on the copy as it is created (the remote prepare-inputs,
cache and config patches) are not on it either (ChatGLM3: ``no attribute 'max_length'``). Measured with a remote
class of the current API (``LlamaPreTrainedModel`` with its own ``prepare_inputs_for_generation``): loads
after the first keep ``generate`` on 4.46.3 - 5.4.0; from 5.5.0 to 5.24.0 they do not.

Detection (``probe``): the InternLM2-style repo loaded twice; the second model must generate like greedy
decoding by full no-cache forwards.

Correction. The registered class, when it is remote code, is given to ``add_generation_mixin_to_remote_model``
as the first load does (one copy per class, kept, so every later load builds the same class). That function
leaves a class that already inherits ``GenerationMixin``, or cannot generate, as it is.
"""

from __future__ import annotations

import weakref
from typing import Any

from hf_genfix.toolkit.remote_code import is_remote

TARGET = "transformers.models.auto.auto_factory:_get_model_class"
MIXIN = "transformers.models.auto.auto_factory:add_generation_mixin_to_remote_model"


def install(patcher: Any) -> None:
    from transformers.models.auto import auto_factory

    patcher.require(TARGET, "config", "model_mapping")
    patcher.require(MIXIN, "model_class")
    # One copy per remote class, held weakly (the copy holds its original as its base, so a weak key would never
    # die); keyed by id, with the base checked against an id reused by a later class.
    copies: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        model_class = wrapped(*args, **kwargs)
        if not isinstance(model_class, type) or not is_remote(model_class):
            return model_class
        copy = copies.get(id(model_class))
        if copy is None or model_class not in (copy, copy.__bases__[0]):
            copy = auto_factory.add_generation_mixin_to_remote_model(model_class)
            copies[id(model_class)] = copy
        return copy

    patcher.wrap(TARGET, wrapper)
