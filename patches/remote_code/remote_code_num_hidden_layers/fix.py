"""remote-code-num-hidden-layers: remote configs that name their depth otherwise break ``generate()`` (4.56+).

The defect. Remote configurations written before transformers needed ``num_hidden_layers`` name the depth their
own way (ChatGLM3: ``num_layers``) and have no ``attribute_map``. From 4.56 ``generate()`` builds its
``DynamicCache`` from the configuration and reads ``config.num_hidden_layers``: ``AttributeError:
'ChatGLMConfig' object has no attribute 'num_hidden_layers'`` (measured 4.56.2, 4.57.6, 5.1.0 - 5.24.0; 4.53.3 and
5.0.0 get past it).

Detection (``probe``): the tiny ChatGLM3-style remote repo must generate like its no-cache reference.

Correction. A remote-code configuration without ``num_hidden_layers`` answers it with the first of
``num_layers``, ``n_layer``, ``n_layers`` it has. The value is served, not stored (``_remote_code.
serve_config_attribute``): ``save_pretrained`` writes the ``config.json`` upstream writes, copies and pickles
answer alike, and a ``num_hidden_layers`` the user sets is theirs, saved as upstream saves it.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit.remote_code import serve_config_attribute

CONFIG_INIT = "transformers.configuration_utils:PretrainedConfig.__init__"
CONFIG_HOOK = "transformers.configuration_utils:PretrainedConfig"
ALIASES = ("num_layers", "n_layer", "n_layers")


def install(patcher: Any) -> None:
    patcher.require(CONFIG_INIT)
    serve_config_attribute(patcher, CONFIG_HOOK, "num_hidden_layers", _layers)


def _layers(config: Any) -> int:
    for alias in ALIASES:
        value = getattr(config, alias, None)
        if isinstance(value, int):
            return value
    raise AttributeError(f"'{type(config).__name__}' object has no attribute 'num_hidden_layers'")
