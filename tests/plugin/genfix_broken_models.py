"""Tiny models whose ``prepare_inputs_for_generation`` is deliberately wrong, the ways a model author gets it wrong.

Each is a subclass of a stock class that lets the stock method do the work and then spoils one thing, so the
defect is the same on every transformers release whatever the stock method's signature is (the cache arrives as
``past_key_values`` up to 5.23 and as ``cache`` on 5.24).
"""

from __future__ import annotations

import torch
from transformers import GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM

from hf_genfix.oracles import tiny_config


def _cached(kwargs: dict, out: dict) -> int:
    cache = out.get("past_key_values", out.get("cache", kwargs.get("past_key_values", kwargs.get("cache"))))
    if cache is None:
        return 0
    if hasattr(cache, "get_seq_length"):
        return int(cache.get_seq_length())
    return int(cache[0][0].shape[-2])


class UntrimmedLlama(LlamaForCausalLM):
    """Feeds the whole sequence at every step instead of only the tokens the cache does not hold."""

    def prepare_inputs_for_generation(self, input_ids, *args, **kwargs):
        out = super().prepare_inputs_for_generation(input_ids, *args, **kwargs)
        out["input_ids"] = input_ids
        # Written the hand-made way: no positions, so forward counts them on from the cache length.
        for key in ("position_ids", "cache_position"):
            out.pop(key, None)
        return out


class MaskFromInputsLlama(LlamaForCausalLM):
    """Rebuilds the attention mask from the tokens it feeds, so the mask never grows past the new token."""

    def prepare_inputs_for_generation(self, input_ids, *args, **kwargs):
        out = super().prepare_inputs_for_generation(input_ids, *args, **kwargs)
        if out.get("attention_mask") is not None and out["attention_mask"].ndim == 2:
            out["attention_mask"] = (out["input_ids"] != self.config.pad_token_id).long()
        return out


class ArangePositionsGPT2(GPT2LMHeadModel):
    """Numbers positions by column (arange from the cache length), ignoring the left padding in the mask."""

    def prepare_inputs_for_generation(self, input_ids, *args, **kwargs):
        out = super().prepare_inputs_for_generation(input_ids, *args, **kwargs)
        fed = out["input_ids"].shape[1]
        start = _cached(kwargs, out)
        positions = torch.arange(start, start + fed, device=input_ids.device)
        out["position_ids"] = positions.unsqueeze(0).expand(input_ids.shape[0], -1)
        return out


def build(cls, model_type: str, seed: int = 0, **overrides):
    config = tiny_config(model_type, **overrides)
    torch.manual_seed(seed)
    return cls(config).float().eval()


class WindowCroppedMaskMistral(MistralForCausalLM):
    """Keeps only the last ``sliding_window`` columns of the mask, "since the cache only keeps the window"."""

    def prepare_inputs_for_generation(self, input_ids, *args, **kwargs):
        out = super().prepare_inputs_for_generation(input_ids, *args, **kwargs)
        mask = out.get("attention_mask")
        if mask is not None and mask.ndim == 2:
            out["attention_mask"] = mask[:, -self.config.sliding_window:]
        return out
