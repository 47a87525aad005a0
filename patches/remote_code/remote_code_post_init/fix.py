"""remote-code-post-init: remote models that never call ``post_init()`` cannot be loaded with ``from_pretrained``
(5.x).

The defect. 4.x models only needed ``post_init()`` to initialise weights, and ChatGLM2/3 and GLM-4V never call it
(their weights always come from a checkpoint). 5.0.0 computes ``self.all_tied_weights_keys`` there and reads it
when ``from_pretrained`` finishes loading: ``AttributeError: 'ChatGLMForConditionalGeneration' object has no
attribute 'all_tied_weights_keys'`` (measured 5.0.0, 5.24.0; a public port of ChatGLM2 to a recent release sets
``self.all_tied_weights_keys = {}`` in its ``__init__`` for this). 4.57.6 loads it.

Detection (``probe``): the tiny ChatGLM3-style remote repo, saved and loaded back with ``from_pretrained``, must
give the logits of the model it was saved from.

Correction. For remote-code instances that lack it, ``all_tied_weights_keys`` is what ``post_init`` would have set
(``get_expanded_tied_weights_keys(all_submodels=False)`` and the children's own, prefixed with their names),
computed on first read and stored on the instance, so that upstream's later updates of it stay. For every other
model the attribute does not exist, as upstream. Nothing else of ``post_init`` (weight initialisation) is run: these
models did not ask for it.
"""

from __future__ import annotations

from typing import Any, Callable

from hf_genfix.toolkit.remote_code import is_remote

HOOK = "transformers.modeling_utils:PreTrainedModel"
EXPAND = "transformers.modeling_utils:PreTrainedModel.get_expanded_tied_weights_keys"
NAME = "all_tied_weights_keys"


class PostInitDefault:
    """``all_tied_weights_keys`` for a remote instance whose ``post_init`` never ran (a non-data descriptor: the
    instance's own value, once set, wins)."""

    def __init__(self, on: Callable[[], bool]):
        self.on = on

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is not None and self.on() and is_remote(type(instance)):
            value = instance.get_expanded_tied_weights_keys(all_submodels=False)
            for name, module in instance.named_children():
                if tied := getattr(module, NAME, None):
                    value.update({f"{name}.{k}": f"{name}.{v}" for k, v in tied.copy().items()})
            vars(instance)[NAME] = value
            return value
        # An AttributeError here sends the lookup to nn.Module.__getattr__, which raises upstream's error.
        raise AttributeError(f"type object {getattr(owner, '__name__', owner)!r} has no attribute {NAME!r}")


def install(patcher: Any) -> None:
    patcher.require(EXPAND, "all_submodels")
    patcher.add(HOOK, NAME, PostInitDefault(patcher.on))
