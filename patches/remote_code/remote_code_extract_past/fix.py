"""remote-code-extract-past: ``_extract_past_from_model_output(..., standardize_cache_format=...)`` is refused.

The defect. ChatGLM3's remote code (and code copied from it) overrides ``_update_model_kwargs_for_generation``
and calls ``self._extract_past_from_model_output(outputs, standardize_cache_format=standardize_cache_format)``,
the 4.40 - 4.41 signature, which returned the cache. 4.42 and 4.43 still take the parameter but return
``(cache_name, cache)``, which the old code stores as the cache: ``AttributeError: 'str' object has no attribute
'shape'`` (measured 4.43.4); 4.44.0 - 4.48.3 drop the parameter: ``TypeError:
GenerationMixin._extract_past_from_model_output() got an unexpected keyword argument
'standardize_cache_format'`` (measured 4.44.2, 4.46.3, 4.48.3). 4.40.2 passes; 4.49.0 removed the method (see
``remote-code-model-methods``).

Detection (``probe``): the tiny ChatGLM3-style remote repo must generate like its no-cache reference.

Correction. A call from remote code that passes ``standardize_cache_format`` gets the 4.40 behaviour (the cache,
in the format the model returned it); every other call (transformers' own, on 4.42 - 4.43 with the keyword too)
is passed through untouched.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.remote_code.shared.model_methods import extract_past_from_model_output

from hf_genfix.toolkit.remote_code import called_from_remote_code

TARGET = "transformers.generation.utils:GenerationMixin._extract_past_from_model_output"


def install(patcher: Any) -> None:
    patcher.require(TARGET, "outputs")

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        # 4.42 - 4.43's own _update_model_kwargs_for_generation passes the keyword too, and wants the pair.
        if "standardize_cache_format" not in kwargs or instance is None or not called_from_remote_code():
            return wrapped(*args, **kwargs)
        return extract_past_from_model_output(instance, *args, **kwargs)

    patcher.wrap(TARGET, wrapper)
