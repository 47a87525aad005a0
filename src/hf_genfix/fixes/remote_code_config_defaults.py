"""remote-code-config-defaults: remote code reading generation defaults off its config (5.0+).

The defect. Up to 4.57 every configuration carried the generation parameters (``max_length`` 20,
``num_beams`` 1, ... and whatever ``config.json`` set, e.g. ``use_cache``) as attributes. Remote code reads
them there: ChatGLM3 (and GLM-4, its derivatives) does ``self.max_sequence_length = config.max_length`` in
``__init__`` and ``self.config.use_cache`` in ``forward``. 5.0.0 pops these keys from the configuration's
keyword arguments and drops the defaults: ``AttributeError: 'ChatGLMConfig' object has no attribute
'max_length'`` (measured 5.0.0, 5.3.0, 5.24.0; 4.57.6 passes).

Detection (``probe``): the tiny ChatGLM3-style remote repo must load and generate like its no-cache reference.

Correction. For remote-code configuration classes only: ``use_cache`` given in ``config.json`` stays an
attribute (5.x's own save check exempts it). The other generation parameters are present on the configuration
while a remote-code model's ``__init__`` runs -- with the value ``config.json`` gave, else the 4.57 default --
and removed afterwards, so that saving the configuration on 5.x (which refuses generation parameters in a model
configuration) works as it does without hf_genfix.
"""

from __future__ import annotations

import weakref
from typing import Any

from ._prepare_inputs_family import _copied_on_load
from ._remote_code import is_remote

CONFIG_INIT = "transformers.configuration_utils:PretrainedConfig.__init__"
CONFIG_HOOK = "transformers.configuration_utils:PretrainedConfig"
MODEL_INIT = "transformers.modeling_utils:PreTrainedModel.__init__"
MODEL_HOOK = "transformers.modeling_utils:PreTrainedModel"

# transformers 4.57.6, PretrainedConfig._get_global_generation_defaults().
GENERATION_DEFAULTS: dict[str, Any] = {
    "max_length": 20, "min_length": 0, "do_sample": False, "early_stopping": False, "num_beams": 1,
    "temperature": 1.0, "top_k": 50, "top_p": 1.0, "typical_p": 1.0, "repetition_penalty": 1.0,
    "length_penalty": 1.0, "no_repeat_ngram_size": 0, "encoder_no_repeat_ngram_size": 0, "bad_words_ids": None,
    "num_return_sequences": 1, "output_scores": False, "return_dict_in_generate": False,
    "forced_bos_token_id": None, "forced_eos_token_id": None, "remove_invalid_values": False,
    "exponential_decay_length_penalty": None, "suppress_tokens": None, "begin_suppress_tokens": None,
    "num_beam_groups": 1, "diversity_penalty": 0.0,
}

# id(config) -> the generation parameters its config.json gave (configs are not hashable on 5.x).
_GIVEN: dict[int, dict[str, Any]] = {}


def _given(config: Any) -> dict[str, Any]:
    return _GIVEN.get(id(config), {})


def install(patcher: Any) -> None:
    def config_init(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        given = {k: kwargs[k] for k in (*GENERATION_DEFAULTS, "use_cache") if k in kwargs}
        result = wrapped(*args, **kwargs)
        if instance is not None and given and id(instance) not in _GIVEN:
            _GIVEN[id(instance)] = given
            weakref.finalize(instance, _GIVEN.pop, id(instance), None)
            if "use_cache" in given and not hasattr(instance, "use_cache"):
                instance.use_cache = given["use_cache"]
        return result

    def model_init(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        config = args[0] if args else kwargs.get("config")
        if config is None or not is_remote(type(config)):
            return wrapped(*args, **kwargs)
        added = {}
        for name, default in GENERATION_DEFAULTS.items():
            if not hasattr(config, name):
                value = added[name] = _given(config).get(name, default)
                object.__setattr__(config, name, value)
        try:
            return wrapped(*args, **kwargs)
        finally:
            for name, value in added.items():
                if vars(config).get(name, object()) is value:
                    object.__delattr__(config, name)

    def remote(cls: type) -> bool:
        return is_remote(cls) and not _copied_on_load(cls)

    patcher.wrap_subclasses(CONFIG_INIT, config_init, where=is_remote, hook=CONFIG_HOOK)
    patcher.wrap_subclasses(MODEL_INIT, model_init, where=remote, hook=MODEL_HOOK)


def probe() -> dict[str, Any]:
    from ..oracles.legacy_models import check_family

    return check_family("chatglm3")
