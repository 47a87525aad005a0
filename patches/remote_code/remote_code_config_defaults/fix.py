"""remote-code-config-defaults: remote configurations lose ``use_cache`` and the generation parameters (5.0+).

The defect. Up to 4.57 every configuration carried the generation parameters (``max_length`` 20,
``num_beams`` 1, ... and whatever ``config.json`` set, e.g. ``use_cache``) as attributes. Remote code reads
them there: ChatGLM3 (and GLM-4, its derivatives) does ``self.config.use_cache`` in ``forward`` when the caller
passes no ``use_cache`` (a plain ``model(**inputs)``; its own ``stream_generate`` on 5.24, whose generation
config leaves it None). 5.0.0 pops these keys from the configuration's keyword arguments: ``AttributeError:
'ChatGLMConfig' object has no attribute 'use_cache'`` (measured 5.0.0, 5.24.0; 4.57.6 passes).

The configuration is built before the model, usually before ``transformers.modeling_utils`` is even imported
(``AutoConfig`` / ``AutoTokenizer`` first): this part targets ``configuration_utils`` alone so that it is in place
by then. The model part (``max_length`` and the other defaults during the model's ``__init__``) is
``remote-code-config-generation-defaults``.

Detection (``probe``): the tiny ChatGLM3-style remote repo must answer a plain forward (no ``use_cache``
argument) like the no-cache reference, and generate like it.

Correction. For remote-code configuration classes only: ``use_cache`` given in ``config.json`` is answered when
the configuration lacks it, and the other generation parameters ``config.json`` gave are remembered for the model
part. The value is served, not stored (``_remote_code.serve_config_attribute``), so ``save_pretrained`` writes
the ``config.json`` upstream writes (no ``use_cache``), and a ``use_cache`` the user sets is theirs, saved as
upstream saves it. A copy or pickle of the configuration answers the value ``config.json`` gave the first
configuration of its class (the same repo's).
"""

from __future__ import annotations

import weakref
from typing import Any

from hf_genfix._patches.remote_code.shared.config_defaults import GENERATION_DEFAULTS, GIVEN

from hf_genfix.toolkit.remote_code import is_remote, serve_config_attribute

CONFIG_INIT = "transformers.configuration_utils:PretrainedConfig.__init__"
CONFIG_HOOK = "transformers.configuration_utils:PretrainedConfig"
# remote configuration class -> the use_cache its first config.json gave (for copies, which have another id).
_USE_CACHE_OF_CLASS: "weakref.WeakKeyDictionary[type, Any]" = weakref.WeakKeyDictionary()


def install(patcher: Any) -> None:
    def config_init(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        kept = {k: kwargs[k] for k in (*GENERATION_DEFAULTS, "use_cache") if k in kwargs}
        result = wrapped(*args, **kwargs)
        if instance is not None and kept and id(instance) not in GIVEN:
            GIVEN[id(instance)] = kept
            weakref.finalize(instance, GIVEN.pop, id(instance), None)
            if "use_cache" in kept:
                _USE_CACHE_OF_CLASS.setdefault(type(instance), kept["use_cache"])
        return result

    patcher.wrap_subclasses(CONFIG_INIT, config_init, where=is_remote, hook=CONFIG_HOOK)
    serve_config_attribute(patcher, CONFIG_HOOK, "use_cache", _use_cache)


def _use_cache(config: Any) -> Any:
    given_here = GIVEN.get(id(config), {})
    if "use_cache" in given_here:
        return given_here["use_cache"]
    if type(config) in _USE_CACHE_OF_CLASS:
        return _USE_CACHE_OF_CLASS[type(config)]
    raise AttributeError(f"'{type(config).__name__}' object has no attribute 'use_cache'")
