"""remote-code-init-buffers: ``from_pretrained`` leaves an old remote model's computed buffers uninitialised (5.x).

The defect. Old remote code computes non-persistent buffers in ``__init__`` (the rotary ``inv_freq`` of every
Llama-style file: DeepSeek-V2/V3, MiniCPM, old Phi-3, InternLM2, ChatGLM), which are not in the checkpoint. Up
to 4.57, ``from_pretrained`` built the model with only the parameters on the meta device, so those buffers kept
their values. 5.0.0 builds everything on the meta device, replaces the non-persistent buffers with
``torch.empty_like`` after loading and expects the model's ``_init_weights`` to fill them, which a 4.x file does
not do: the buffers hold whatever the memory held, and the outputs are silently wrong (measured with the tiny
repos saved next to their code: max logit diff 3.4 on 5.0.0 and 0.05 on 5.24.0 against the saved model; 4.57.6
exact). Models built with ``from_config`` are not affected.

Detection (``probe``): the tiny DeepSeek-V2-style remote repo, saved and loaded back with ``from_pretrained``,
must have the rotary buffers of the model it was saved from. (On 5.0 - 5.12, except 5.2, the loader also lets the
file's ``_init_weights`` overwrite the loaded weights: another defect, ``remote-code-init-weights``.)

Correction. For a remote-code class, ``from_pretrained`` builds the model as 4.x did: parameters go to the meta
device as they are registered (the checkpoint replaces them; torch's initialisers then run on meta tensors, which
costs nothing), ``init_weights`` is skipped as 4.x's ``no_init_weights`` skipped it, buffers are computed for real;
when the loader then replaces the non-persistent buffers with empty tensors, their computed values are copied into
them. Other models are built as upstream builds them.

Only the building thread sees any of this. transformers' ``no_init_weights()`` (which an earlier version used)
replaces ``torch.nn.init.*`` and ``PreTrainedModel.init_weights`` for the whole process: models another thread built
meanwhile came out uninitialised (7 of 30 seeded ``from_config`` builds differed). So each part is per thread: a
thread-local flag read by one torch parameter-registration hook (registered once, inert in every other thread) and
by the ``init_weights`` wrapper, and the device context, a torch function mode, which torch keeps per thread.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

from hf_genfix.toolkit.remote_code import is_remote

CONTEXT = "transformers.modeling_utils:PreTrainedModel.get_init_context"
INIT = "transformers.modeling_utils:PreTrainedModel.init_weights"
MOVE = "transformers.modeling_utils:PreTrainedModel._move_missing_keys_from_meta_to_device"
BUFFERS = "transformers.modeling_utils:PreTrainedModel.named_non_persistent_buffers"
_building = threading.local()  # depth of parameters_on_meta() blocks open in this thread
_hook: Any = None


def _building_here() -> bool:
    return getattr(_building, "depth", 0) > 0


def _to_meta(module: Any, name: str, param: Any) -> Any:
    """torch's global parameter-registration hook: a parameter registered in a thread that is building a remote
    model goes to the meta device; every other registration is left as it is (None)."""
    if param is None or not _building_here() or param.device.type == "meta":
        return None
    from torch import nn

    kwargs = vars(param) if type(param) is not nn.Parameter else {}
    return type(param)(param.to("meta"), requires_grad=param.requires_grad, **kwargs)


def _register_hook_once() -> None:
    # Registered once and never removed: torch iterates its hook dict on every registration in every thread, so
    # adding or removing an entry while another thread builds a model could break that thread's iteration.
    global _hook
    if _hook is None:
        from torch.nn.modules.module import register_module_parameter_registration_hook

        _hook = register_module_parameter_registration_hook(_to_meta)


@contextlib.contextmanager
def parameters_on_meta() -> Iterator[None]:
    """In this thread only: parameters are moved to the meta device as modules register them, everything else is
    computed for real (4.x's ``init_empty_weights(include_buffers=False)``)."""
    import torch

    _register_hook_once()
    _building.depth = getattr(_building, "depth", 0) + 1
    try:
        with torch.device("cpu"):  # a torch function mode: per thread, like upstream's torch.device("meta")
            yield
    finally:
        _building.depth -= 1


def install(patcher: Any) -> None:
    import torch

    patcher.require(BUFFERS)
    patcher.require(MOVE, "missing_keys")
    _register_hook_once()

    def context(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        contexts = wrapped(*args, **kwargs)
        if not (isinstance(instance, type) and is_remote(instance)):
            return contexts
        return [parameters_on_meta() if isinstance(c, torch.device) and c.type == "meta" else c for c in contexts]

    def move(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if instance is None or not is_remote(type(instance)):
            return wrapped(*args, **kwargs)
        computed = {k: b.detach().clone() for k, b in instance.named_non_persistent_buffers() if b.device.type != "meta"}
        result = wrapped(*args, **kwargs)
        with torch.no_grad():
            for key, value in computed.items():
                buffer = instance.get_buffer(key)
                if buffer is not None and buffer.shape == value.shape:
                    buffer.copy_(value.to(device=buffer.device, dtype=buffer.dtype))
        return result

    def init_weights(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if _building_here():
            return None  # 4.x's no_init_weights: the checkpoint replaces the weights
        return wrapped(*args, **kwargs)

    patcher.wrap(CONTEXT, context)
    patcher.wrap(INIT, init_weights)
    patcher.wrap(MOVE, move)
