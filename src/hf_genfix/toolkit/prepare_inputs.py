"""Wrapping ``prepare_inputs_for_generation`` everywhere it is defined: the generic method and every model class's
override, now and later (remote code). The prepare-inputs patches and the remote-code patches that correct an
override written for an older transformers share it."""

from __future__ import annotations

import sys
from typing import Any, Callable

GENERIC = "transformers.generation.utils:GenerationMixin.prepare_inputs_for_generation"
# Later subclasses (remote code) are caught by an __init_subclass__ on PreTrainedModel: it comes right after the
# model's own classes in every MRO, before nn.Module and the mixins, and its own __init_subclass__ (4.54+)
# chains to super(). GenerationMixin itself sits last (4.50+), behind classes that would have to chain to it.
HOOK = "transformers.modeling_utils:PreTrainedModel"


def wrap_overrides(patcher: Any, wrapper: Callable, where: Callable[[type], bool] | None = None) -> None:
    """Wrap the generic method and every class's own override (``where`` filters), now and later."""

    def accept(cls: type) -> bool:
        return not copied_on_load(cls) and (where is None or where(cls))

    patcher.wrap_subclasses(GENERIC, wrapper, where=accept, hook=HOOK)


def copied_on_load(cls: type) -> bool:
    """A remote-code class that transformers (4.46+) will load as a copy, ``type(name, (cls, GenerationMixin),
    {**cls.__dict__})`` (``add_generation_mixin_to_remote_model``). The copy is wrapped when it is created; a
    wrapper on the original would be copied along where ``revert()`` cannot see it."""
    if not cls.__module__.startswith("transformers_modules"):
        return False
    if "GenerationMixin" in str(cls.__bases__):
        return False
    auto_factory = sys.modules.get("transformers.models.auto.auto_factory")
    return hasattr(auto_factory, "add_generation_mixin_to_remote_model")
