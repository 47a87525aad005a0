"""remote-code-num-hidden-layers: remote configs that name their depth otherwise break ``generate()`` (4.56+).

The defect. Remote configurations written before transformers needed ``num_hidden_layers`` name the depth their
own way (ChatGLM3: ``num_layers``) and have no ``attribute_map``. From 4.56 ``generate()`` builds its
``DynamicCache`` from the configuration and reads ``config.num_hidden_layers``: ``AttributeError:
'ChatGLMConfig' object has no attribute 'num_hidden_layers'`` (measured 4.56.2, 4.57.6, 5.1.0 - 5.24.0; 4.53.3 and
5.0.0 get past it).

Detection (``probe``): the tiny ChatGLM3-style remote repo must generate like its no-cache reference.

Correction. A remote-code configuration without ``num_hidden_layers`` gets it after ``__init__`` from the first
of ``num_layers``, ``n_layer``, ``n_layers`` it has (so it is also saved with the configuration).
"""

from __future__ import annotations

from typing import Any

from ._remote_code import is_remote

CONFIG_INIT = "transformers.configuration_utils:PretrainedConfig.__init__"
CONFIG_HOOK = "transformers.configuration_utils:PretrainedConfig"
ALIASES = ("num_layers", "n_layer", "n_layers")


def install(patcher: Any) -> None:
    def config_init(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        result = wrapped(*args, **kwargs)
        if instance is not None and not hasattr(instance, "num_hidden_layers"):
            for alias in ALIASES:
                value = getattr(instance, alias, None)
                if isinstance(value, int):
                    instance.num_hidden_layers = value
                    break
        return result

    patcher.wrap_subclasses(CONFIG_INIT, config_init, where=is_remote, hook=CONFIG_HOOK)


def probe() -> dict[str, Any]:
    from ..oracles.legacy_models import check_family

    return check_family("chatglm3")
