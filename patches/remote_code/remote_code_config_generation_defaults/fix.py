"""remote-code-config-generation-defaults: remote models reading generation defaults off their config (5.0+).

The defect. ChatGLM3 (and GLM-4, its derivatives) does ``self.max_sequence_length = config.max_length`` in its
model's ``__init__``: up to 4.57 every configuration carried the generation parameters (``max_length`` 20,
``num_beams`` 1, ... or what ``config.json`` set); 5.0.0 drops them: ``AttributeError: 'ChatGLMConfig' object
has no attribute 'max_length'`` at model construction (measured 5.0.0, 5.3.0, 5.24.0; 4.57.6 passes).

Detection (``probe``): the tiny ChatGLM3-style remote repo must load and generate like its no-cache reference.

Correction. While a remote-code model's ``__init__`` runs, the generation parameters its configuration lacks are
present on it, with the value ``config.json`` gave (remembered by ``remote-code-config-defaults``) else the 4.57
default, and removed afterwards, so that saving the configuration on 5.x (which refuses generation parameters in a
model configuration) works as it does without hf_genfix.

Saving. ``PreTrainedModel.__init__`` builds the model's generation configuration from the configuration while
those values are lent to it, so it would carry them (``top_k`` 50, ``max_length`` 20, ``num_beams`` 1, ... 19 of
them for a model written for 5.x) and ``save_pretrained`` would write them into ``generation_config.json``, where
a reader without hf_genfix takes them for the author's choice. After ``__init__`` each lent value still there is
replaced by what upstream's build gives for the configuration without it (and the generation configuration still
counts as unmodified), so the saved folder is upstream's.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.remote_code.shared.config_defaults import GENERATION_DEFAULTS, given

from hf_genfix.toolkit.prepare_inputs import copied_on_load
from hf_genfix.toolkit.remote_code import is_remote

MODEL_INIT = "transformers.modeling_utils:PreTrainedModel.__init__"
MODEL_HOOK = "transformers.modeling_utils:PreTrainedModel"


def install(patcher: Any) -> None:
    def model_init(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        config = args[0] if args else kwargs.get("config")
        if config is None or not is_remote(type(config)):
            return wrapped(*args, **kwargs)
        added = {}
        for name, default in GENERATION_DEFAULTS.items():
            if not hasattr(config, name):
                value = added[name] = given(config).get(name, default)
                object.__setattr__(config, name, value)
        try:
            return wrapped(*args, **kwargs)
        finally:
            for name, value in added.items():
                if vars(config).get(name, object()) is value:
                    object.__delattr__(config, name)
            if added and instance is not None:
                _as_upstream(instance, config, added)

    def remote(cls: type) -> bool:
        return is_remote(cls) and not copied_on_load(cls)

    patcher.wrap_subclasses(MODEL_INIT, model_init, where=remote, hook=MODEL_HOOK)


def _as_upstream(model: Any, config: Any, added: dict[str, Any]) -> None:
    """Give the generation configuration ``__init__`` built from ``config`` (while it carried ``added``) the
    values upstream builds without them, where it still holds what was lent."""
    built = vars(model).get("generation_config")
    if built is None:
        return
    unmodified = getattr(built, "_original_object_hash", None) == hash(built)
    reference = type(built).from_model_config(config)
    for name, value in added.items():
        if getattr(built, name, None) == value:
            setattr(built, name, getattr(reference, name, None))
    if unmodified:
        built._original_object_hash = hash(built)
