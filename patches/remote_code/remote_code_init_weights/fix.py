"""remote-code-init-weights: ``from_pretrained`` re-initialises an old remote model's loaded weights (5.x).

The defect. After loading, 5.x runs the model's ``_init_weights`` on every module it does not know to be
initialised. transformers' own models initialise through functions that skip loaded tensors; a 4.x file writes in
place (``module.weight.data.normal_(mean=0.0, std=std)``: DeepSeek, MiniCPM, InternLM2, old Phi-3, ChatGLM,
Qwen-1), so the weights just loaded are overwritten with random ones: the model is silently random. 4.x ran
``_init_weights`` before loading, so the checkpoint overwrote what it drew. Measured with the tiny repos saved next
to their code and loaded back:

- DeepSeek-V2 style (``_init_weights`` touches the module it is given): every weight differs from the saved model
  on 5.0.0, 5.1.0 and 5.3.0 - 5.12.1; 5.2.0 skips modules whose weight is loaded and that hold no buffers; 5.13.0
  skips, for remote code, modules whose own parameters and buffers were all loaded.
- Qwen-1 style (``for name, p in module.named_parameters(): if name == "c_proj.weight": p.data.normal_(...)``,
  GPT-2's rule, on an attention module that owns a non-persistent buffer): 5.13's rule does not skip the attention
  module (its buffer is not in the checkpoint), and its ``_init_weights`` re-draws the loaded ``c_proj.weight`` of
  its child: 5.0.0 - 5.24.0 (upstream too); 4.57.6 is right.

Detection (``probe``): the tiny Qwen-1-style remote repo, saved and loaded back with ``from_pretrained``, must hold
exactly the tensors that were saved.

Correction. For remote-code models, what the checkpoint loaded is what the model keeps, whatever the file's
``_init_weights`` reaches: a module whose own parameters and buffers were all loaded is marked initialised and not
passed to ``_init_weights`` (5.13's rule); for any other module, the loaded tensors below it are replaced by meta
stand-ins (flagged loaded) while its ``_init_weights`` runs and put back afterwards, so in-place writes, torch's
initialisers and reassignments all miss them. Should ``_init_weights`` fail on a stand-in (code that reads values),
it runs again on the real tensors, and the loaded ones are restored from a copy. Tensors the checkpoint did not
hold are initialised as upstream does.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from hf_genfix.toolkit.remote_code import is_remote

TARGET = "transformers.modeling_utils:PreTrainedModel._initialize_weights"


def _is_loaded(tensor: Any) -> bool:
    return tensor is not None and getattr(tensor, "_is_hf_initialized", False)


def _loaded(module: Any) -> bool:
    tensors = [*module.parameters(recurse=False), *(b for b in module.buffers(recurse=False) if b is not None)]
    return all(_is_loaded(t) for t in tensors)


def _loaded_slots(module: Any) -> list[tuple[dict, str, Any]]:
    """(the dict holding it, name, tensor) for each loaded parameter and buffer of ``module`` and below."""
    return [(slots, name, tensor) for sub in module.modules() for slots in (sub._parameters, sub._buffers)
            for name, tensor in slots.items() if _is_loaded(tensor)]


@contextlib.contextmanager
def _stand_ins(slots: list[tuple[dict, str, Any]]) -> Iterator[None]:
    import torch
    from torch import nn

    try:
        for holder, name, tensor in slots:
            empty = torch.empty_like(tensor, device="meta")
            stand_in = nn.Parameter(empty, requires_grad=tensor.requires_grad) if isinstance(tensor, nn.Parameter) \
                else empty
            stand_in._is_hf_initialized = True
            holder[name] = stand_in
        yield
    finally:
        for holder, name, tensor in slots:
            holder[name] = tensor


def install(patcher: Any) -> None:
    import torch

    patcher.require(TARGET, "module")

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        module = args[0] if args else kwargs.get("module")
        if (instance is None or module is None or not is_remote(type(instance))
                or getattr(module, "_is_hf_initialized", False)):
            return wrapped(*args, **kwargs)
        if _loaded(module):
            module._is_hf_initialized = True
            return None
        slots = _loaded_slots(module)
        if not slots:
            return wrapped(*args, **kwargs)
        try:
            with _stand_ins(slots):
                return wrapped(*args, **kwargs)
        except Exception:  # code that reads the values it re-draws: on the real tensors, then restored
            kept = [t.detach().clone() for _, _, t in slots]
            try:
                return wrapped(*args, **kwargs)
            finally:
                with torch.no_grad():
                    for (holder, name, tensor), value in zip(slots, kept):
                        holder[name] = tensor
                        tensor.copy_(value)

    patcher.wrap(TARGET, wrapper)
