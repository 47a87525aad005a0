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
device as they are registered (with torch's initialisers idle, since the checkpoint replaces them), buffers are
computed for real; when the loader then replaces the non-persistent buffers with empty tensors, their computed
values are copied into them. Other models are built as upstream builds them.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

from ._remote_code import is_remote

CONTEXT = "transformers.modeling_utils:PreTrainedModel.get_init_context"
MOVE = "transformers.modeling_utils:PreTrainedModel._move_missing_keys_from_meta_to_device"
BUFFERS = "transformers.modeling_utils:PreTrainedModel.named_non_persistent_buffers"
_LOCK = threading.RLock()


@contextlib.contextmanager
def parameters_on_meta() -> Iterator[None]:
    """Parameters are moved to the meta device as modules register them; everything else is computed for real
    (4.x's ``init_empty_weights(include_buffers=False)``)."""
    import torch
    from torch import nn
    from transformers import initialization

    register = nn.Module.register_parameter
    builder = threading.get_ident()  # modules other threads build meanwhile are left alone

    def register_on_meta(module: nn.Module, name: str, param: Any) -> None:
        register(module, name, param)
        if param is not None and param.device.type != "meta" and threading.get_ident() == builder:
            kwargs = vars(param) if type(param) is not nn.Parameter else {}
            module._parameters[name] = type(param)(param.to("meta"), requires_grad=param.requires_grad, **kwargs)

    with _LOCK, initialization.no_init_weights():
        nn.Module.register_parameter = register_on_meta  # type: ignore[method-assign]
        try:
            with torch.device("cpu"):
                yield
        finally:
            nn.Module.register_parameter = register  # type: ignore[method-assign]


def install(patcher: Any) -> None:
    import torch

    patcher.require(BUFFERS)
    patcher.require(MOVE, "missing_keys")

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

    patcher.wrap(CONTEXT, context)
    patcher.wrap(MOVE, move)


def probe() -> dict[str, Any]:
    from ..oracles.legacy_models import check_family_reload_buffers

    return check_family_reload_buffers("deepseek")
