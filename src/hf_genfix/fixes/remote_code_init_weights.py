"""remote-code-init-weights: ``from_pretrained`` re-initialises an old remote model's loaded weights (5.0 - 5.12).

The defect. After loading, 5.x runs the model's ``_init_weights`` on every module it does not know to be
initialised. transformers' own models initialise through functions that skip loaded tensors; a 4.x file writes in
place (``module.weight.data.normal_(mean=0.0, std=std)``: DeepSeek, MiniCPM, InternLM2, old Phi-3, ChatGLM), so
the weights just loaded are overwritten with random ones: the model is silently random (measured with the tiny
DeepSeek-style repo saved next to its code: every weight differs from the saved model on 5.0.0, 5.1.0 and 5.3.0 -
5.12.1; 5.2.0 skips modules whose weight is loaded and that hold no buffers; 5.13.0 skips, for remote code, modules
whose own parameters and buffers were all loaded; 4.57.6 and 5.24.0 are right).

Detection (``probe``): the tiny DeepSeek-V2-style remote repo, saved and loaded back with ``from_pretrained``,
must give the logits of the model it was saved from.

Correction. 5.13's rule, for remote-code models: a module whose own parameters and buffers were all loaded is
marked initialised and its ``_init_weights`` is not run. Everything else is initialised as upstream does.
"""

from __future__ import annotations

from typing import Any

from ._remote_code import is_remote

TARGET = "transformers.modeling_utils:PreTrainedModel._initialize_weights"


def _loaded(module: Any) -> bool:
    tensors = [*module.parameters(recurse=False), *(b for b in module.buffers(recurse=False) if b is not None)]
    return all(getattr(t, "_is_hf_initialized", False) for t in tensors)


def install(patcher: Any) -> None:
    patcher.require(TARGET, "module")

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        module = args[0] if args else kwargs.get("module")
        if (instance is not None and module is not None and is_remote(type(instance))
                and not getattr(module, "_is_hf_initialized", False) and _loaded(module)):
            module._is_hf_initialized = True
            return None
        return wrapped(*args, **kwargs)

    patcher.wrap(TARGET, wrapper)


def probe() -> dict[str, Any]:
    from ..oracles.legacy_models import check_family_reload

    return check_family_reload("deepseek")
