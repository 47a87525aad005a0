"""remote-code-model-methods: remote code calling model methods that transformers removed.

The defect. Remote-code models call methods their base classes had when they were written:

- ``self._extract_past_from_model_output(outputs, standardize_cache_format=...)`` in ChatGLM3's own
  ``_update_model_kwargs_for_generation`` (4.40 signature; the cache is returned). 4.49.0 removed the method:
  ``AttributeError: 'ChatGLMForConditionalGeneration' object has no attribute '_extract_past_from_model_output'``
  (measured 4.49.0, 4.53.3; before it, see ``remote-code-extract-past``).
- ``self.get_head_mask(head_mask, num_hidden_layers)`` (and ``_convert_head_mask_to_5d``), in BERT- and
  GPT-2-derived remote code: removed in 5.0.0 (4.57.6 has them).

Detection (``probe``): the tiny ChatGLM3-style remote repo must load and generate like its no-cache reference.

Correction. While a remote-code class's own ``forward`` or ``_update_model_kwargs_for_generation`` runs (classes
whose module calls these methods, read from its source), the methods it lacks are bound on the instance, with the
meaning of the last release that had them, and taken off afterwards. Nothing is added to transformers' classes
(an ``nn.Module.__getattr__`` hook would cost every model a few microseconds per submodule access).
"""

from __future__ import annotations

from typing import Any, Callable

from ._prepare_inputs_family import _copied_on_load
from ._remote_code import is_remote, uses

UPDATE = "transformers.generation.utils:GenerationMixin._update_model_kwargs_for_generation"
FORWARD = "transformers.modeling_utils:PreTrainedModel.forward"
HOOK = "transformers.modeling_utils:PreTrainedModel"
# _remote_code.REMOVED_API names of what these methods serve.
USES = ("_extract_past_from_model_output()", "_extract_past_from_model_output(standardize_cache_format=...)",
        "PreTrainedModel.get_head_mask()")
_KEYS = ("past_key_values", "mems", "past_buckets_states", "cache_params")


def extract_past_from_model_output(self: Any, outputs: Any, standardize_cache_format: Any = None) -> Any:
    """4.40 (called with ``standardize_cache_format``): the cache; 4.42 - 4.48 (called without it):
    ``(cache_name, cache)``."""
    name, past = "past_key_values", None
    for key in _KEYS:
        if key in outputs:
            name, past = key, outputs[key]
            break
    if standardize_cache_format is None:
        return name, past
    if standardize_cache_format and hasattr(self, "_convert_to_standard_cache"):
        past = self._convert_to_standard_cache(past, batch_size=outputs.logits.shape[0])
    return past


def _convert_head_mask_to_5d(self: Any, head_mask: Any, num_hidden_layers: int) -> Any:
    if head_mask.dim() == 1:
        head_mask = head_mask.unsqueeze(0).unsqueeze(0).unsqueeze(-1).unsqueeze(-1)
        head_mask = head_mask.expand(num_hidden_layers, -1, -1, -1, -1)
    elif head_mask.dim() == 2:
        head_mask = head_mask.unsqueeze(1).unsqueeze(-1).unsqueeze(-1)
    if head_mask.dim() != 5:
        raise ValueError(f"head_mask.dim != 5, instead {head_mask.dim()}")
    return head_mask.to(dtype=self.dtype)


def get_head_mask(self: Any, head_mask: Any, num_hidden_layers: int, is_attention_chunked: bool = False) -> Any:
    if head_mask is None:
        return [None] * num_hidden_layers
    head_mask = _convert_head_mask_to_5d(self, head_mask, num_hidden_layers)
    return head_mask.unsqueeze(-1) if is_attention_chunked is True else head_mask


RESTORED: dict[str, Callable] = {
    "_extract_past_from_model_output": extract_past_from_model_output,
    "get_head_mask": get_head_mask,
    "_convert_head_mask_to_5d": _convert_head_mask_to_5d,
}


def install(patcher: Any) -> None:
    def serving(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if instance is None:
            return wrapped(*args, **kwargs)
        own = vars(instance)
        added = [n for n in RESTORED if n not in own and not hasattr(type(instance), n)]
        for name in added:
            own[name] = RESTORED[name].__get__(instance, type(instance))
        try:
            return wrapped(*args, **kwargs)
        finally:
            for name in added:
                own.pop(name, None)

    def old_code(cls: type) -> bool:
        return is_remote(cls) and not _copied_on_load(cls) and uses(cls, *USES)

    patcher.wrap_subclasses(UPDATE, serving, where=old_code, hook=HOOK)
    patcher.wrap_subclasses(FORWARD, serving, where=old_code, hook=HOOK)


def probe() -> dict[str, Any]:
    from ..oracles.legacy_models import check_family

    return check_family("chatglm3")
