"""``transformers.modeling_attn_mask_utils`` as remote code knew it (removed from transformers in 5.24.0).

Served by ``remote-code-attn-mask-utils`` only to remote code that imports it, on releases without the module.
The behaviour is that of the last release that had it (5.23.0; unchanged in substance since 4.36): additive
float masks of shape ``(batch, 1, query_length, key_value_length)`` holding 0 where a position may be attended
and the dtype's minimum elsewhere; the ``*_for_sdpa`` variants return ``None`` where scaled-dot-product
attention's own ``is_causal`` gives the same result. Written here, not copied; the names and signatures are the
ones remote code calls.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

__all__ = [
    "AttentionMaskConverter",
    "_prepare_4d_causal_attention_mask",
    "_prepare_4d_causal_attention_mask_for_sdpa",
    "_prepare_4d_attention_mask",
    "_prepare_4d_attention_mask_for_sdpa",
    "_create_4d_causal_attention_mask",
]


# 5.0 - 5.23 warned on every use of the converter; the warning stays, saying what happened since.
DEPRECATION_MESSAGE = (
    "The attention mask API under `transformers.modeling_attn_mask_utils` (`AttentionMaskConverter`) was removed "
    "in Transformers 5.24 (hf_genfix restores it for remote code). Please use the new API in "
    "`transformers.masking_utils`."
)


def _deprecated() -> None:
    warnings.warn(DEPRECATION_MESSAGE, FutureWarning, stacklevel=3)


def _tracing(tensor: Any) -> bool:
    compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)()
    return bool(torch.jit.is_tracing() or isinstance(tensor, torch.fx.Proxy) or compiling)


class AttentionMaskConverter:
    """Builds 4-D additive masks from 2-D padding masks (``is_causal``: also hide future positions)."""

    is_causal: bool
    sliding_window: int | None

    def __init__(self, is_causal: bool, sliding_window: int | None = None):
        _deprecated()
        self.is_causal = is_causal
        self.sliding_window = sliding_window
        if sliding_window is not None and sliding_window <= 0:
            raise ValueError(f"Make sure that when passing `sliding_window` that its value is a strictly positive "
                             f"integer, not `{sliding_window}`")

    def to_causal_4d(self, batch_size: int, query_length: int, key_value_length: int,
                     dtype: torch.dtype, device: Any = "cpu") -> torch.Tensor | None:
        if not self.is_causal:
            raise ValueError(f"Please use `to_causal_4d` only if {self.__class__} has `is_causal` set to True.")
        past = key_value_length - query_length
        if query_length > 1 or self.sliding_window is not None:
            return self._make_causal_mask((batch_size, query_length), dtype, device=device,
                                          past_key_values_length=past, sliding_window=self.sliding_window)
        return None

    def to_4d(self, attention_mask_2d: torch.Tensor, query_length: int, dtype: torch.dtype,
              key_value_length: int | None = None) -> torch.Tensor:
        shape = (attention_mask_2d.shape[0], query_length)
        causal = None
        if (shape[-1] > 1 or self.sliding_window is not None) and self.is_causal:
            if key_value_length is None:
                raise ValueError("This attention mask converter is causal. Make sure to pass `key_value_length` "
                                 "to correctly create a causal mask.")
            causal = self._make_causal_mask(shape, dtype, device=attention_mask_2d.device,
                                            past_key_values_length=key_value_length - query_length,
                                            sliding_window=self.sliding_window)
        elif self.sliding_window is not None:
            raise NotImplementedError("Sliding window is currently only implemented for causal masking")
        expanded = self._expand_mask(attention_mask_2d, dtype, tgt_len=shape[-1]).to(attention_mask_2d.device)
        if causal is not None:
            expanded = causal.masked_fill(expanded.bool(), torch.finfo(dtype).min)
        return expanded

    @staticmethod
    def _make_causal_mask(input_ids_shape: Any, dtype: torch.dtype, device: Any,
                          past_key_values_length: int = 0, sliding_window: int | None = None) -> torch.Tensor:
        _deprecated()
        bsz, tgt_len = input_ids_shape
        total = tgt_len + past_key_values_length
        rows = torch.arange(tgt_len, device=device)[:, None] + past_key_values_length
        cols = torch.arange(total, device=device)[None, :]
        hidden = cols > rows
        if sliding_window is not None:
            # As 4.40 - 5.23: a query sees itself and the sliding_window positions before it.
            hidden = hidden | (cols <= rows - sliding_window - 1)
        mask = torch.zeros((tgt_len, total), dtype=dtype, device=device)
        mask = mask.masked_fill(hidden, torch.finfo(dtype).min)
        return mask[None, None].expand(bsz, 1, tgt_len, total)

    @staticmethod
    def _expand_mask(mask: torch.Tensor, dtype: torch.dtype, tgt_len: int | None = None) -> torch.Tensor:
        _deprecated()
        bsz, src_len = mask.size()
        tgt_len = tgt_len if tgt_len is not None else src_len
        inverted = 1.0 - mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
        return inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)

    @staticmethod
    def _unmask_unattended(expanded_mask: torch.Tensor, min_dtype: float) -> torch.Tensor:
        # Rows that attend to nothing (left padding) attend to everything instead, so that memory-efficient
        # SDPA kernels do not produce NaN; those rows' outputs are never used.
        _deprecated()
        if expanded_mask.dtype == torch.bool:
            raise ValueError("AttentionMaskConverter._unmask_unattended expects a float `expanded_mask`, got a "
                             "BoolTensor.")
        return expanded_mask.mul(~torch.all(expanded_mask == min_dtype, dim=-1, keepdim=True))

    @staticmethod
    def _ignore_causal_mask_sdpa(attention_mask: torch.Tensor | None, inputs_embeds: torch.Tensor,
                                 past_key_values_length: int, sliding_window: int | None = None,
                                 is_training: bool = False) -> bool:
        _, query_length = inputs_embeds.shape[0], inputs_embeds.shape[1]
        key_value_length = query_length + past_key_values_length
        tracing = _tracing(inputs_embeds)
        if attention_mask is None:
            return bool(not tracing and (query_length == 1 or key_value_length == query_length)
                        and (sliding_window is None or key_value_length < sliding_window))
        if attention_mask.dim() != 2:
            return False
        if tracing or not bool(torch.all(attention_mask == 1)):
            return False
        return bool((query_length == 1 or key_value_length == query_length)
                    and (sliding_window is None or key_value_length < sliding_window))


def _prepare_4d_causal_attention_mask(attention_mask: torch.Tensor | None, input_shape: Any,
                                      inputs_embeds: torch.Tensor, past_key_values_length: int,
                                      sliding_window: int | None = None) -> torch.Tensor | None:
    converter = AttentionMaskConverter(is_causal=True, sliding_window=sliding_window)
    key_value_length = input_shape[-1] + past_key_values_length
    if attention_mask is not None and attention_mask.dim() == 2:
        return converter.to_4d(attention_mask, input_shape[-1], key_value_length=key_value_length,
                               dtype=inputs_embeds.dtype)
    if attention_mask is not None and attention_mask.dim() == 4:
        expected = (input_shape[0], 1, input_shape[1], key_value_length)
        if tuple(attention_mask.shape) != expected:
            raise ValueError(f"Incorrect 4D attention_mask shape: {tuple(attention_mask.shape)}; expected: "
                             f"{expected}.")
        inverted = 1.0 - attention_mask
        return inverted.masked_fill(inverted.to(torch.bool), torch.finfo(inputs_embeds.dtype).min)
    return converter.to_causal_4d(input_shape[0], input_shape[-1], key_value_length, dtype=inputs_embeds.dtype,
                                  device=inputs_embeds.device)


def _prepare_4d_causal_attention_mask_for_sdpa(attention_mask: torch.Tensor | None, input_shape: Any,
                                               inputs_embeds: torch.Tensor, past_key_values_length: int,
                                               sliding_window: int | None = None) -> torch.Tensor | None:
    converter = AttentionMaskConverter(is_causal=True, sliding_window=sliding_window)
    key_value_length = input_shape[-1] + past_key_values_length
    if AttentionMaskConverter._ignore_causal_mask_sdpa(attention_mask, inputs_embeds, past_key_values_length,
                                                       sliding_window):
        return None
    if attention_mask is None:
        return converter.to_causal_4d(input_shape[0], input_shape[-1], key_value_length, dtype=inputs_embeds.dtype,
                                      device=inputs_embeds.device)
    if attention_mask.dim() == 4:
        expanded = attention_mask
    else:
        expanded = converter.to_4d(attention_mask, input_shape[-1], dtype=inputs_embeds.dtype,
                                   key_value_length=key_value_length)
    if not _tracing(inputs_embeds) and expanded.device.type in ("cuda", "xpu"):
        expanded = AttentionMaskConverter._unmask_unattended(expanded, min_dtype=torch.finfo(inputs_embeds.dtype).min)
    return expanded


def _prepare_4d_attention_mask(mask: torch.Tensor, dtype: torch.dtype, tgt_len: int | None = None) -> torch.Tensor:
    return AttentionMaskConverter._expand_mask(mask=mask, dtype=dtype, tgt_len=tgt_len)


def _prepare_4d_attention_mask_for_sdpa(mask: torch.Tensor, dtype: torch.dtype,
                                        tgt_len: int | None = None) -> torch.Tensor | None:
    _, key_value_length = mask.shape
    tgt_len = tgt_len if tgt_len is not None else key_value_length
    if not _tracing(mask) and bool(torch.all(mask == 1)):
        return None
    return AttentionMaskConverter._expand_mask(mask=mask, dtype=dtype, tgt_len=tgt_len)


def _create_4d_causal_attention_mask(input_shape: Any, dtype: torch.dtype, device: Any,
                                     past_key_values_length: int = 0,
                                     sliding_window: int | None = None) -> torch.Tensor | None:
    converter = AttentionMaskConverter(is_causal=True, sliding_window=sliding_window)
    key_value_length = past_key_values_length + input_shape[-1]
    return converter.to_causal_4d(input_shape[0], input_shape[-1], key_value_length, dtype=dtype, device=device)
