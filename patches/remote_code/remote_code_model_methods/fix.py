"""remote-code-model-methods: remote code calling model methods that transformers removed.

The defect. Remote-code models call methods their base classes had when they were written:

- ``self._get_logits_warper(generation_config)`` in ChatGLM2/3's ``stream_generate`` (behind ``stream_chat``).
  4.45.0 folded the warpers into ``_get_logits_processor`` and removed the method: ``AttributeError:
  'ChatGLMForConditionalGeneration' object has no attribute '_get_logits_warper'`` (measured 4.45.0, 4.57.6,
  5.24.0; for 4.42 - 4.44 see ``remote-code-logits-warper``).
- ``self._extract_past_from_model_output(outputs, standardize_cache_format=...)`` in ChatGLM3's own
  ``_update_model_kwargs_for_generation`` (4.40 signature; the cache is returned). 4.49.0 removed the method
  (measured 4.49.0, 4.53.3; before it, see ``remote-code-extract-past``).
- ``self.get_head_mask(head_mask, num_hidden_layers)`` (and ``_convert_head_mask_to_5d``), in BERT- and
  GPT-2-derived remote code: removed in 5.0.0 (4.57.6 has them).
- ``self.get_extended_attention_mask(attention_mask, input_shape)`` and ``self.invert_attention_mask(mask)``, in
  BERT-derived remote code: removed in 5.17.0 (5.16.1 has them, deprecated).

Detection (``probe``): the tiny ChatGLM3-style remote repo must generate like its no-cache reference, with
``generate()`` and with its own ``stream_generate``.

Correction. Each method a release lacks is added to ``PreTrainedModel`` as an attribute that only instances of
old remote code see (classes whose module calls it, read from its source), with the meaning of the last release
that had it. For every other model, and inside ``hf_genfix.disabled()``, the attribute does not exist: reading it
raises the ``AttributeError`` upstream raises, and ``hasattr`` says False. Nothing costs anything per call.
"""

from __future__ import annotations

import types
from typing import Any, Callable

from hf_genfix._patches.remote_code.shared.model_methods import extract_past_from_model_output

from hf_genfix.toolkit.remote_code import is_remote, uses

HOOK = "transformers.modeling_utils:PreTrainedModel"


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


def invert_attention_mask(self: Any, encoder_attention_mask: Any) -> Any:
    """5.16: 1 -> 0 and 0 -> the dtype's minimum, broadcastable over heads."""
    import torch

    if encoder_attention_mask.dim() == 3:
        extended = encoder_attention_mask[:, None, :, :]
    elif encoder_attention_mask.dim() == 2:
        extended = encoder_attention_mask[:, None, None, :]
    else:
        raise ValueError(f"Wrong shape for encoder_attention_mask (shape {encoder_attention_mask.shape})")
    extended = extended.to(dtype=self.dtype)
    return (1.0 - extended) * torch.finfo(self.dtype).min


def get_extended_attention_mask(self: Any, attention_mask: Any, input_shape: Any, device: Any = None,
                                dtype: Any = None) -> Any:
    """5.16's meaning with the 4.x signature: old code may still pass ``device`` (ignored, as 4.x did since 4.31)
    third; a dtype given third is taken as the dtype, as 5.x's signature reads it."""
    import torch

    if isinstance(device, torch.dtype) and dtype is None:
        device, dtype = None, device
    dtype = self.dtype if dtype is None else dtype
    if attention_mask.dim() == 3:
        extended = attention_mask[:, None, :, :]
    elif attention_mask.dim() == 2:
        extended = attention_mask[:, None, None, :]
        if getattr(self.config, "is_decoder", None):
            batch_size, seq_length = input_shape
            seq_ids = torch.arange(seq_length, device=attention_mask.device)
            causal = (seq_ids[None, None, :].repeat(batch_size, seq_length, 1) <= seq_ids[None, :, None])
            causal = causal.to(attention_mask.dtype)
            if causal.shape[1] < attention_mask.shape[1]:  # a cached prefix: attend to all of it
                prefix = attention_mask.shape[1] - causal.shape[1]
                causal = torch.cat([causal.new_ones((batch_size, seq_length, prefix)), causal], dim=-1)
            extended = causal[:, None, :, :] * attention_mask[:, None, None, :]
    else:
        raise ValueError(f"Wrong shape for input_ids (shape {input_shape}) or attention_mask "
                         f"(shape {attention_mask.shape})")
    extended = extended.to(dtype=dtype)
    return (1.0 - extended) * torch.finfo(dtype).min


def get_logits_warper(self: Any, generation_config: Any, device: Any = None) -> Any:
    """4.44's warpers for sampling (``device`` optional, as before 4.42: the model's device).

    From 4.45 ``_get_logits_processor`` appends these same warpers itself when ``do_sample`` is set: for old code
    that applies both lists (ChatGLM's ``stream_generate`` does), the warpers are then already in the first one,
    and applying them twice would square the temperature. So such code gets none here when sampling."""
    import re

    from transformers.generation import logits_process as lp

    from hf_genfix.toolkit.remote_code import remote_sources

    config = generation_config
    if config.do_sample and any(re.search(r"\._get_logits_processor\(", text) for text in remote_sources(type(self))):
        return lp.LogitsProcessorList()
    min_tokens_to_keep = 1
    if (config.num_beams or 1) > 1:  # keep one non-eos token per eos token, to explore continuations
        eos = getattr(config, "_eos_token_tensor", None)
        if eos is None:
            eos = config.eos_token_id
        count = len(eos) if isinstance(eos, list) else (eos.numel() if hasattr(eos, "numel") else 1)
        min_tokens_to_keep = count + 1
    warpers = lp.LogitsProcessorList()
    if config.temperature is not None and config.temperature != 1.0:
        warpers.append(lp.TemperatureLogitsWarper(config.temperature))
    if config.top_k is not None and config.top_k != 0:
        warpers.append(lp.TopKLogitsWarper(top_k=config.top_k, min_tokens_to_keep=min_tokens_to_keep))
    if config.top_p is not None and config.top_p < 1.0:
        warpers.append(lp.TopPLogitsWarper(top_p=config.top_p, min_tokens_to_keep=min_tokens_to_keep))
    if getattr(config, "min_p", None) is not None:
        warpers.append(lp.MinPLogitsWarper(min_p=config.min_p, min_tokens_to_keep=min_tokens_to_keep))
    if config.typical_p is not None and config.typical_p < 1.0:
        warpers.append(lp.TypicalLogitsWarper(mass=config.typical_p, min_tokens_to_keep=min_tokens_to_keep))
    if config.epsilon_cutoff is not None and 0.0 < config.epsilon_cutoff < 1.0:
        warpers.append(lp.EpsilonLogitsWarper(epsilon=config.epsilon_cutoff, min_tokens_to_keep=min_tokens_to_keep))
    if config.eta_cutoff is not None and 0.0 < config.eta_cutoff < 1.0:
        device = self.device if device is None else device
        warpers.append(lp.EtaLogitsWarper(epsilon=config.eta_cutoff, min_tokens_to_keep=min_tokens_to_keep,
                                          device=device))
    if config.renormalize_logits is True:  # always last when present
        warpers.append(lp.LogitNormalization())
    return warpers


# name: (the method, the _remote_code.REMOVED_API entries of code that calls it)
RESTORED: dict[str, tuple[Callable, tuple[str, ...]]] = {
    "_get_logits_warper": (get_logits_warper, ("GenerationMixin._get_logits_warper()",)),
    "_extract_past_from_model_output": (extract_past_from_model_output, (
        "_extract_past_from_model_output()", "_extract_past_from_model_output(standardize_cache_format=...)")),
    "get_head_mask": (get_head_mask, ("PreTrainedModel.get_head_mask()",)),
    "_convert_head_mask_to_5d": (_convert_head_mask_to_5d, ("PreTrainedModel.get_head_mask()",)),
    "get_extended_attention_mask": (get_extended_attention_mask, ("PreTrainedModel.get_extended_attention_mask()",)),
    "invert_attention_mask": (invert_attention_mask, ("PreTrainedModel.invert_attention_mask()",)),
}


class ForOldCode:
    """A method that only instances of old remote code (``is_remote`` and calling it) see, while the patch is on;
    for everything else the attribute does not exist."""

    def __init__(self, name: str, func: Callable, callers: tuple[str, ...], on: Callable[[], bool]):
        self.name, self.func, self.callers, self.on = name, func, callers, on
        self.__doc__ = func.__doc__

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is not None and self.on() and is_remote(type(instance)) and uses(type(instance), *self.callers):
            return types.MethodType(self.func, instance)
        # An AttributeError here sends the lookup to nn.Module.__getattr__, which raises upstream's error.
        raise AttributeError(f"type object {getattr(owner, '__name__', owner)!r} has no attribute {self.name!r}")


def install(patcher: Any) -> None:
    from transformers.modeling_utils import PreTrainedModel

    for name, (func, callers) in RESTORED.items():
        # Only what this release lacks: 4.45 - 4.48 still have _extract_past_from_model_output (PreTrainedModel
        # inherits GenerationMixin until 4.50, and no later GenerationMixin has any of these), 5.0 - 5.16
        # get_extended_attention_mask.
        if not any(name in vars(k) for k in PreTrainedModel.__mro__):
            patcher.add(HOOK, name, ForOldCode(name, func, callers, patcher.on))
