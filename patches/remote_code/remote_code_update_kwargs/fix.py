"""remote-code-update-kwargs: remote ``_update_model_kwargs_for_generation`` overrides meet a None mask (5.18+).

The defect. Remote code that overrides ``_update_model_kwargs_for_generation`` (ChatGLM3, GLM-4 and their
derivatives) grows the mask as 4.x ``generate()`` kept it: ``if "attention_mask" in model_kwargs:
attention_mask.new_ones(...)``. From 5.18.0 ``generate()`` drops a mask that is all ones but keeps the key, set
to None: ``AttributeError: 'NoneType' object has no attribute 'new_ones'`` on every unpadded batch (measured
5.24.0; 5.16.0 passes; the assignment is in the wheels of 5.18.0 - 5.23.0, not in 5.17.0).

Detection (``probe``): the tiny ChatGLM3-style remote repo must generate like its no-cache reference on an
unpadded batch.

Correction. A remote-code class's own override is called without the None entry, as 4.x called it (no mask
key when there is no mask), and the entry is put back afterwards, so that ``generate()`` finds what it left.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit.prepare_inputs import copied_on_load
from hf_genfix.toolkit.remote_code import is_remote

TARGET = "transformers.generation.utils:GenerationMixin._update_model_kwargs_for_generation"
HOOK = "transformers.modeling_utils:PreTrainedModel"


def install(patcher: Any) -> None:
    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        model_kwargs = args[1] if len(args) > 1 else kwargs.get("model_kwargs")
        if not isinstance(model_kwargs, dict) or "attention_mask" not in model_kwargs:
            return wrapped(*args, **kwargs)
        if model_kwargs["attention_mask"] is not None:
            return wrapped(*args, **kwargs)
        del model_kwargs["attention_mask"]
        try:
            result = wrapped(*args, **kwargs)
        finally:
            model_kwargs.setdefault("attention_mask", None)
        if isinstance(result, dict):
            result.setdefault("attention_mask", None)
        return result

    def accept(cls: type) -> bool:
        return is_remote(cls) and not copied_on_load(cls)

    patcher.wrap_subclasses(TARGET, wrapper, where=accept, hook=HOOK)
