"""Tiny remote-code models written the way six families of Hub repos were written for older transformers.

Each family is a ``configuration_<name>.py`` and a ``modeling_<name>.py`` that ``write_family`` lays out next
to a ``config.json`` whose ``auto_map`` points at them, so that ``trust_remote_code=True`` loads them as it loads
a Hub repo. They are ours (a few hundred parameters, no weights); what they take from the real files is which
transformers APIs they call and where (read in the public repositories, facts only):

- ``phi3``  (old Phi-3 ``modeling_phi3.py``): ``Cache`` / ``DynamicCache.from_legacy_cache`` in the model,
  ``get_usable_length`` in the model and in attention, ``to_legacy_cache`` on return,
  ``_prepare_4d_causal_attention_mask`` from ``transformers.modeling_attn_mask_utils``, ``rope_scaling["type"]``,
  a 4.40-style ``prepare_inputs_for_generation`` (``seen_tokens``, ``get_max_length()``), ``_reorder_cache``,
  no ``GenerationMixin`` among the bases;
- ``deepseek`` (DeepSeek-V2 ``modeling_deepseek.py``): the same cache calls, plus ``AttentionMaskConverter`` and
  ``_prepare_4d_attention_mask`` imports, ``is_torch_fx_available`` from ``transformers.utils.import_utils``,
  ``ALL_LAYERNORM_LAYERS`` / ``is_torch_greater_or_equal_than_1_13`` from ``transformers.pytorch_utils``,
  ``is_flash_attn_greater_or_equal_2_10`` from ``transformers.utils`` (gone on 5.4.0 only);
- ``minicpm`` (``modeling_minicpm.py``): as DeepSeek-V2, and ``_prepare_4d_causal_attention_mask_for_sdpa``
  for the sdpa path;
- ``internlm2`` (``modeling_internlm2.py``, first releases): tuple caches throughout -- ``past_key_values[0][0]
  .shape[2]`` in the model and in ``prepare_inputs_for_generation``, ``torch.cat`` onto ``past_key_value[0]`` in
  attention, per-layer ``(key, value)`` tuples returned; ``rope_scaling["type"]`` read by the config's
  validation and by the model;
- ``chatglm3`` (``modeling_chatglm.py``): a config with ``num_layers`` and no ``num_hidden_layers``,
  ``config.max_length`` / ``config.use_cache`` read from the config, tuple caches, a
  ``prepare_inputs_for_generation`` with ``is_first_forward``, and an ``_update_model_kwargs_for_generation``
  override that calls ``self._extract_past_from_model_output(outputs, standardize_cache_format=...)``.
- ``chatglm2`` (ChatGLM2's and the first ChatGLM3 releases' ``modeling_chatglm.py``): as ``chatglm3``, with the
  cache in their layout, ``[seq, batch, heads, dim]`` (concatenated on dim 0, the past length read from
  ``past_key_values[0][0].shape[0]``, ``_reorder_cache`` selecting on dim 1).

The attention itself is the same small causal multi-head attention with rotary positions in every family, so
that the only thing that differs from one to the other is the API usage under test.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, Iterator, Sequence

FAMILIES = ("phi3", "deepseek", "minicpm", "internlm2", "chatglm3", "chatglm2", "qwen", "merged", "stacked",
            "bloom")

# Small enough for a CPU probe in well under a second; two layers so that per-layer cache indexing matters.
_SIZES = dict(vocab_size=128, hidden_size=32, num_attention_heads=4, intermediate_size=64, layers=2)

_ROTARY = '''
def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class TinyRotary(nn.Module):
    def __init__(self, dim, base=10000.0, scaling_factor=1.0):
        super().__init__()
        self.scaling_factor = scaling_factor
        self.register_buffer("inv_freq", 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)), persistent=False)

    def forward(self, position_ids):
        freqs = (position_ids.float() / self.scaling_factor)[..., None] * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos()[:, None], emb.sin()[:, None]


def apply_rotary(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class TinyMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.up = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x):
        return self.down(nn.functional.silu(self.up(x)))
'''

# ---------------------------------------------------------------------------------------------------------------
# Cache-class families (Phi-3 old, DeepSeek-V2, MiniCPM): written for the 4.36 - 4.40 Cache API.
_CACHE_CONFIG = '''
from transformers import PretrainedConfig


class {Name}Config(PretrainedConfig):
    model_type = "{name}"

    def __init__(self, vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                 num_attention_heads=4, rope_theta=10000.0, rope_scaling=None, use_cache=True,
                 pad_token_id=0, bos_token_id=1, eos_token_id=2, **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.rope_theta = rope_theta
        self.rope_scaling = rope_scaling
        self._rope_scaling_validation()
        self.use_cache = use_cache
        super().__init__(pad_token_id=pad_token_id, bos_token_id=bos_token_id, eos_token_id=eos_token_id, **kwargs)

    def _rope_scaling_validation(self):
        if self.rope_scaling is None:
            return
        scaling_type = self.rope_scaling.get("type", None)
        if scaling_type not in ("linear", "dynamic"):
            raise ValueError(f"rope_scaling type must be linear or dynamic, got {{scaling_type}}")
'''

_CACHE_IMPORTS = {
    "phi3": '''
from transformers.modeling_attn_mask_utils import _prepare_4d_causal_attention_mask
''',
    "deepseek": '''
from transformers.modeling_attn_mask_utils import (
    AttentionMaskConverter,
    _prepare_4d_attention_mask,
    _prepare_4d_causal_attention_mask,
)
from transformers.pytorch_utils import ALL_LAYERNORM_LAYERS, is_torch_greater_or_equal_than_1_13
from transformers.utils import is_flash_attn_greater_or_equal_2_10
from transformers.utils.import_utils import is_torch_fx_available

if is_torch_fx_available():
    _prepare_4d_causal_attention_mask = torch.fx.wrap(_prepare_4d_causal_attention_mask)
''',
    "minicpm": '''
from transformers import LogitsWarper
from transformers.modeling_attn_mask_utils import (
    AttentionMaskConverter,
    _prepare_4d_attention_mask,
    _prepare_4d_causal_attention_mask,
    _prepare_4d_causal_attention_mask_for_sdpa,
)
from transformers.pytorch_utils import ALL_LAYERNORM_LAYERS, is_torch_greater_or_equal_than_1_13
from transformers.utils.import_utils import is_torch_fx_available

if is_torch_fx_available():
    _prepare_4d_causal_attention_mask = torch.fx.wrap(_prepare_4d_causal_attention_mask)
''',
}

_CACHE_MASK = {
    "phi3": '''
        attention_mask = _prepare_4d_causal_attention_mask(
            attention_mask, (batch_size, seq_length), inputs_embeds, past_key_values_length
        )
''',
    "deepseek": '''
        attention_mask = _prepare_4d_causal_attention_mask(
            attention_mask, (batch_size, seq_length), inputs_embeds, past_key_values_length
        )
''',
    "minicpm": '''
        if self.config._attn_implementation == "sdpa":
            attention_mask = _prepare_4d_causal_attention_mask_for_sdpa(
                attention_mask, (batch_size, seq_length), inputs_embeds, past_key_values_length
            )
        else:
            attention_mask = _prepare_4d_causal_attention_mask(
                attention_mask, (batch_size, seq_length), inputs_embeds, past_key_values_length
            )
''',
}

# DeepSeek-V2's eager attention asserts that it got a mask (4.x generate() always made one).
_ATTENTION_CHECK = {"deepseek": "        assert attention_mask is not None\n"}

_CACHE_MODELING = '''
import math
from typing import List, Optional, Tuple, Union

import torch
from torch import nn

from transformers.cache_utils import Cache, DynamicCache
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast
from transformers.modeling_utils import PreTrainedModel
{imports}
from .configuration_{name} import {Name}Config
{rotary}

class {Name}Attention(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=False)
        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self._init_rope()

    def _init_rope(self):
        if self.config.rope_scaling is None:
            self.rotary_emb = TinyRotary(self.head_dim, base=self.config.rope_theta)
        else:
            scaling_type = self.config.rope_scaling["type"]
            scaling_factor = self.config.rope_scaling["factor"]
            if scaling_type == "linear":
                self.rotary_emb = TinyRotary(self.head_dim, base=self.config.rope_theta, scaling_factor=scaling_factor)
            else:
                raise ValueError(f"Unknown RoPE scaling type {{scaling_type}}")

    def forward(self, hidden_states, attention_mask=None, position_ids=None, past_key_value=None,
                output_attentions=False, use_cache=False, **kwargs):
        bsz, q_len, _ = hidden_states.size()
        q, k, v = self.qkv(hidden_states).split(self.config.hidden_size, dim=-1)
        q = q.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)

        kv_seq_len = k.shape[-2]
        if past_key_value is not None:
            kv_seq_len += past_key_value.get_usable_length(kv_seq_len, self.layer_idx)
        cos, sin = self.rotary_emb(position_ids)
        q, k = apply_rotary(q, k, cos, sin)
        if past_key_value is not None:
            k, v = past_key_value.update(k, v, self.layer_idx)

        attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if attn_weights.size() != (bsz, self.num_heads, q_len, kv_seq_len):
            raise ValueError(f"Attention weights should be of size {{(bsz, self.num_heads, q_len, kv_seq_len)}}")
{mask_check}        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(attn_weights, v).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(out), None, past_key_value


class {Name}DecoderLayer(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.self_attn = {Name}Attention(config, layer_idx)
        self.mlp = TinyMLP(config)

    def forward(self, hidden_states, attention_mask=None, position_ids=None, past_key_value=None,
                output_attentions=False, use_cache=False, **kwargs):
        attn, weights, present = self.self_attn(hidden_states, attention_mask, position_ids, past_key_value,
                                                output_attentions, use_cache)
        hidden_states = hidden_states + attn
        hidden_states = hidden_states + self.mlp(hidden_states)
        outputs = (hidden_states,)
        if use_cache:
            outputs += (present,)
        return outputs


class {Name}PreTrainedModel(PreTrainedModel):
    config_class = {Name}Config
    base_model_prefix = "model"
    _no_split_modules = ["{Name}DecoderLayer"]
    _supports_cache_class = True

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.2)


class {Name}Model({Name}PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.padding_idx = config.pad_token_id
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, self.padding_idx)
        self.layers = nn.ModuleList([{Name}DecoderLayer(config, i) for i in range(config.num_hidden_layers)])
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                inputs_embeds=None, use_cache=None, output_attentions=None, output_hidden_states=None,
                return_dict=None):
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict
        batch_size, seq_length = input_ids.shape[:2]

        past_key_values_length = 0
        if use_cache:
            use_legacy_cache = not isinstance(past_key_values, Cache)
            if use_legacy_cache:
                past_key_values = DynamicCache.from_legacy_cache(past_key_values)
            past_key_values_length = past_key_values.get_usable_length(seq_length)

        if position_ids is None:
            position_ids = torch.arange(
                past_key_values_length, seq_length + past_key_values_length, dtype=torch.long,
                device=input_ids.device,
            ).unsqueeze(0)
        else:
            position_ids = position_ids.view(-1, seq_length).long()

        inputs_embeds = self.embed_tokens(input_ids)
{mask}
        hidden_states = inputs_embeds
        next_decoder_cache = None
        for decoder_layer in self.layers:
            layer_outputs = decoder_layer(hidden_states, attention_mask=attention_mask, position_ids=position_ids,
                                          past_key_value=past_key_values, use_cache=use_cache)
            hidden_states = layer_outputs[0]
            if use_cache:
                next_decoder_cache = layer_outputs[1]

        next_cache = None
        if use_cache:
            next_cache = next_decoder_cache.to_legacy_cache() if use_legacy_cache else next_decoder_cache
        if not return_dict:
            return tuple(v for v in [hidden_states, next_cache] if v is not None)
        return BaseModelOutputWithPast(last_hidden_state=hidden_states, past_key_values=next_cache)


class {Name}ForCausalLM({Name}PreTrainedModel):
    _tied_weights_keys = ["lm_head.weight"]

    def __init__(self, config):
        super().__init__(config)
        self.model = {Name}Model(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, new_embeddings):
        self.lm_head = new_embeddings

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                inputs_embeds=None, labels=None, use_cache=None, output_attentions=None,
                output_hidden_states=None, return_dict=None):
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict
        outputs = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                             past_key_values=past_key_values, inputs_embeds=inputs_embeds, use_cache=use_cache,
                             return_dict=return_dict)
        logits = self.lm_head(outputs[0]).float()
        if not return_dict:
            return (logits,) + outputs[1:]
        return CausalLMOutputWithPast(logits=logits, past_key_values=outputs.past_key_values)

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None,
                                      inputs_embeds=None, **kwargs):
        if past_key_values is not None:
            if isinstance(past_key_values, Cache):
                cache_length = past_key_values.get_seq_length()
                past_length = past_key_values.seen_tokens
                max_cache_length = past_key_values.get_max_length()
            else:
                cache_length = past_length = past_key_values[0][0].shape[2]
                max_cache_length = None
            if attention_mask is not None and attention_mask.shape[1] > input_ids.shape[1]:
                input_ids = input_ids[:, -(attention_mask.shape[1] - past_length):]
            elif past_length < input_ids.shape[1]:
                input_ids = input_ids[:, past_length:]
            if (max_cache_length is not None and attention_mask is not None
                    and cache_length + input_ids.shape[1] > max_cache_length):
                attention_mask = attention_mask[:, -max_cache_length:]

        position_ids = kwargs.get("position_ids", None)
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -input_ids.shape[1]:]
        model_inputs = {{"input_ids": input_ids}}
        model_inputs.update({{"position_ids": position_ids, "past_key_values": past_key_values,
                              "use_cache": kwargs.get("use_cache"), "attention_mask": attention_mask}})
        return model_inputs

    @staticmethod
    def _reorder_cache(past_key_values, beam_idx):
        return tuple(tuple(s.index_select(0, beam_idx.to(s.device)) for s in layer) for layer in past_key_values)
'''

# ---------------------------------------------------------------------------------------------------------------
# InternLM2 (first releases): tuple caches everywhere, rope_scaling["type"] in config and model.
_INTERNLM2_CONFIG = '''
from transformers.configuration_utils import PretrainedConfig


class InternLM2Config(PretrainedConfig):
    model_type = "internlm2"
    _auto_class = "AutoConfig"

    def __init__(self, vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                 num_attention_heads=4, rope_theta=10000, rope_scaling=None, use_cache=True,
                 pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False, **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.rope_theta = rope_theta
        self.rope_scaling = rope_scaling
        self._rope_scaling_validation()
        self.use_cache = use_cache
        super().__init__(pad_token_id=pad_token_id, bos_token_id=bos_token_id, eos_token_id=eos_token_id,
                         tie_word_embeddings=tie_word_embeddings, **kwargs)

    def _rope_scaling_validation(self):
        if self.rope_scaling is None:
            return
        if not isinstance(self.rope_scaling, dict) or len(self.rope_scaling) != 2:
            raise ValueError(f"`rope_scaling` must be a dictionary with two fields, `type` and `factor`, "
                             f"got {self.rope_scaling}")
        rope_scaling_type = self.rope_scaling.get("type", None)
        rope_scaling_factor = self.rope_scaling.get("factor", None)
        if rope_scaling_type is None or rope_scaling_type not in ["linear", "dynamic"]:
            raise ValueError(f"`rope_scaling`'s type field must be one of ['linear', 'dynamic'], "
                             f"got {rope_scaling_type}")
        if rope_scaling_factor is None or not isinstance(rope_scaling_factor, float) or rope_scaling_factor < 1.0:
            raise ValueError(f"`rope_scaling`'s factor field must be a float >= 1, got {rope_scaling_factor}")
'''

_INTERNLM2_MODELING = '''
import math

import torch
from torch import nn

from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast
from transformers.modeling_utils import PreTrainedModel

from .configuration_internlm2 import InternLM2Config
{rotary}

def _make_causal_mask(input_ids_shape, dtype, device, past_key_values_length=0):
    bsz, tgt_len = input_ids_shape
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min, device=device)
    cond = torch.arange(mask.size(-1), device=device)
    mask.masked_fill_(cond < (cond + 1).view(mask.size(-1), 1), 0)
    mask = mask.to(dtype)
    if past_key_values_length > 0:
        mask = torch.cat([torch.zeros(tgt_len, past_key_values_length, dtype=dtype, device=device), mask], dim=-1)
    return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len + past_key_values_length)


def _expand_mask(mask, dtype, tgt_len=None):
    bsz, src_len = mask.size()
    tgt_len = tgt_len if tgt_len is not None else src_len
    expanded = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
    inverted = 1.0 - expanded
    return inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)


class InternLM2Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.wqkv = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=False)
        self.wo = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self._init_rope()

    def _init_rope(self):
        if self.config.rope_scaling is None:
            self.rotary_emb = TinyRotary(self.head_dim, base=self.config.rope_theta)
        else:
            scaling_type = self.config.rope_scaling["type"]
            scaling_factor = self.config.rope_scaling["factor"]
            if scaling_type == "linear":
                self.rotary_emb = TinyRotary(self.head_dim, base=self.config.rope_theta, scaling_factor=scaling_factor)
            else:
                raise ValueError("Currently we only support rotary embedding's type being 'linear'.")

    def forward(self, hidden_states, attention_mask=None, position_ids=None, past_key_value=None,
                output_attentions=False, use_cache=False, **kwargs):
        bsz, q_len, _ = hidden_states.size()
        q, k, v = self.wqkv(hidden_states).split(self.config.hidden_size, dim=-1)
        q = q.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary_emb(position_ids)
        q, k = apply_rotary(q, k, cos, sin)
        if past_key_value is not None:
            k = torch.cat([past_key_value[0], k], dim=2)
            v = torch.cat([past_key_value[1], v], dim=2)
        past_key_value = (k, v) if use_cache else None
        attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(attn_weights, v).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.wo(out), None, past_key_value


class InternLM2DecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = InternLM2Attention(config)
        self.feed_forward = TinyMLP(config)

    def forward(self, hidden_states, attention_mask=None, position_ids=None, past_key_value=None,
                output_attentions=False, use_cache=False, **kwargs):
        attn, weights, present = self.attention(hidden_states, attention_mask, position_ids, past_key_value,
                                                output_attentions, use_cache)
        hidden_states = hidden_states + attn
        hidden_states = hidden_states + self.feed_forward(hidden_states)
        outputs = (hidden_states,)
        if use_cache:
            outputs += (present,)
        return outputs


class InternLM2PreTrainedModel(PreTrainedModel):
    config_class = InternLM2Config
    base_model_prefix = "model"
    _no_split_modules = ["InternLM2DecoderLayer"]

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.2)


class InternLM2Model(InternLM2PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, config.pad_token_id)
        self.layers = nn.ModuleList([InternLM2DecoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.post_init()

    def _prepare_decoder_attention_mask(self, attention_mask, input_shape, inputs_embeds, past_key_values_length):
        combined = None
        if input_shape[-1] > 1:
            combined = _make_causal_mask(input_shape, inputs_embeds.dtype, inputs_embeds.device,
                                         past_key_values_length)
        if attention_mask is not None:
            expanded = _expand_mask(attention_mask, inputs_embeds.dtype, tgt_len=input_shape[-1])
            combined = expanded if combined is None else expanded + combined
        return combined

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                inputs_embeds=None, use_cache=None, output_attentions=None, output_hidden_states=None,
                return_dict=None):
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict
        batch_size, seq_length = input_ids.shape[:2]
        seq_length_with_past = seq_length
        past_key_values_length = 0
        if past_key_values is not None:
            past_key_values_length = past_key_values[0][0].shape[2]
            seq_length_with_past = seq_length_with_past + past_key_values_length
        if position_ids is None:
            position_ids = torch.arange(past_key_values_length, seq_length + past_key_values_length,
                                        dtype=torch.long, device=input_ids.device).unsqueeze(0)
        inputs_embeds = self.tok_embeddings(input_ids)
        if attention_mask is None:
            attention_mask = torch.ones((batch_size, seq_length_with_past), dtype=torch.bool,
                                        device=inputs_embeds.device)
        attention_mask = self._prepare_decoder_attention_mask(attention_mask, (batch_size, seq_length),
                                                              inputs_embeds, past_key_values_length)
        hidden_states = inputs_embeds
        next_decoder_cache = () if use_cache else None
        for idx, decoder_layer in enumerate(self.layers):
            past_key_value = past_key_values[idx] if past_key_values is not None else None
            layer_outputs = decoder_layer(hidden_states, attention_mask=attention_mask, position_ids=position_ids,
                                          past_key_value=past_key_value, use_cache=use_cache)
            hidden_states = layer_outputs[0]
            if use_cache:
                next_decoder_cache += (layer_outputs[1],)
        next_cache = next_decoder_cache if use_cache else None
        if not return_dict:
            return tuple(v for v in [hidden_states, next_cache] if v is not None)
        return BaseModelOutputWithPast(last_hidden_state=hidden_states, past_key_values=next_cache)


class InternLM2ForCausalLM(InternLM2PreTrainedModel):
    _auto_class = "AutoModelForCausalLM"
    _tied_weights_keys = []

    def __init__(self, config):
        super().__init__(config)
        self.model = InternLM2Model(config)
        self.output = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.model.tok_embeddings

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                inputs_embeds=None, labels=None, use_cache=None, output_attentions=None,
                output_hidden_states=None, return_dict=None):
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict
        outputs = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                             past_key_values=past_key_values, use_cache=use_cache, return_dict=return_dict)
        logits = self.output(outputs[0]).float()
        if not return_dict:
            return (logits,) + outputs[1:]
        return CausalLMOutputWithPast(logits=logits, past_key_values=outputs.past_key_values)

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None,
                                      inputs_embeds=None, **kwargs):
        if past_key_values is not None:
            past_length = past_key_values[0][0].shape[2]
            if input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = input_ids.shape[1] - 1
            input_ids = input_ids[:, remove_prefix_length:]
        position_ids = kwargs.get("position_ids", None)
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -input_ids.shape[1]:]
        model_inputs = {{"input_ids": input_ids}}
        model_inputs.update({{"position_ids": position_ids, "past_key_values": past_key_values,
                              "use_cache": kwargs.get("use_cache"), "attention_mask": attention_mask}})
        return model_inputs

    @staticmethod
    def _reorder_cache(past_key_values, beam_idx):
        return tuple(tuple(s.index_select(0, beam_idx.to(s.device)) for s in layer) for layer in past_key_values)
'''

# ---------------------------------------------------------------------------------------------------------------
# ChatGLM3: num_layers (no num_hidden_layers), config.max_length, tuple caches, its own kwargs update.
_CHATGLM3_CONFIG = '''
from transformers import PretrainedConfig


class ChatGLMConfig(PretrainedConfig):
    model_type = "chatglm"

    def __init__(self, num_layers=2, padded_vocab_size=128, hidden_size=32, ffn_hidden_size=64,
                 num_attention_heads=4, seq_length=64, rope_ratio=1, pad_token_id=0, eos_token_id=2, **kwargs):
        self.num_layers = num_layers
        self.vocab_size = padded_vocab_size
        self.padded_vocab_size = padded_vocab_size
        self.hidden_size = hidden_size
        self.ffn_hidden_size = ffn_hidden_size
        self.num_attention_heads = num_attention_heads
        self.seq_length = seq_length
        self.rope_ratio = rope_ratio
        super().__init__(pad_token_id=pad_token_id, eos_token_id=eos_token_id, **kwargs)
'''

_CHATGLM3_MODELING = '''
import copy
import math
from typing import Any, Dict, Optional

import torch
from torch import nn

from transformers.generation.utils import LogitsProcessorList, StoppingCriteriaList
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast
from transformers.modeling_utils import PreTrainedModel
from transformers.utils import ModelOutput

from .configuration_chatglm import ChatGLMConfig
{rotary}

class SelfAttention(nn.Module):
    def __init__(self, config, layer_number):
        super().__init__()
        self.config = config
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.query_key_value = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=True)
        self.dense = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.rotary = TinyRotary(self.head_dim, base=10000.0 * config.rope_ratio)

    def forward(self, hidden_states, attention_mask, position_ids, kv_cache=None, use_cache=True):
        bsz, q_len, _ = hidden_states.size()
        q, k, v = self.query_key_value(hidden_states).split(self.config.hidden_size, dim=-1)
        q = q.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary(position_ids)
        q, k = apply_rotary(q, k, cos, sin)
        if kv_cache is not None:
            cache_k, cache_v = kv_cache
            k = torch.cat((cache_k, k{store}), dim={seq_dim}){load}
            v = torch.cat((cache_v, v{store}), dim={seq_dim}){load}
        kv_cache = (k{store}, v{store}) if use_cache else None
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            scores = scores.masked_fill(attention_mask, float("-inf"))
        probs = nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.dense(out), kv_cache


class GLMBlock(nn.Module):
    def __init__(self, config, layer_number):
        super().__init__()
        self.self_attention = SelfAttention(config, layer_number)
        self.mlp = TinyMLP(type("C", (), dict(hidden_size=config.hidden_size,
                                              intermediate_size=config.ffn_hidden_size)))

    def forward(self, hidden_states, attention_mask, position_ids, kv_cache=None, use_cache=True):
        attn, kv_cache = self.self_attention(hidden_states, attention_mask, position_ids, kv_cache, use_cache)
        hidden_states = hidden_states + attn
        return hidden_states + self.mlp(hidden_states), kv_cache


class ChatGLMPreTrainedModel(PreTrainedModel):
    is_parallelizable = False
    config_class = ChatGLMConfig
    base_model_prefix = "transformer"
    _no_split_modules = ["GLMBlock"]

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.2)

    def get_masks(self, input_ids, past_key_values, padding_mask=None):
        batch_size, seq_length = input_ids.shape
        full_attention_mask = torch.ones(batch_size, seq_length, seq_length, device=input_ids.device)
        full_attention_mask.tril_()
        past_length = 0
        if past_key_values:
            past_length = past_key_values[0][0].shape[{seq_dim}]
        if past_length:
            full_attention_mask = torch.cat((torch.ones(batch_size, seq_length, past_length,
                                                        device=input_ids.device), full_attention_mask), dim=-1)
        if padding_mask is not None:
            full_attention_mask = full_attention_mask * padding_mask.unsqueeze(1)
        if not past_length and padding_mask is not None:
            full_attention_mask -= padding_mask.unsqueeze(-1) - 1
        full_attention_mask = (full_attention_mask < 0.5).bool()
        full_attention_mask.unsqueeze_(1)
        return full_attention_mask

    def get_position_ids(self, input_ids, device):
        batch_size, seq_length = input_ids.shape
        return torch.arange(seq_length, dtype=torch.long, device=device).unsqueeze(0).repeat(batch_size, 1)


class ChatGLMModel(ChatGLMPreTrainedModel):
    def __init__(self, config, empty_init=True, device=None):
        super().__init__(config)
        self.embedding = nn.Embedding(config.padded_vocab_size, config.hidden_size)
        self.num_layers = config.num_layers
        self.layers = nn.ModuleList([GLMBlock(config, i + 1) for i in range(self.num_layers)])
        self.output_layer = nn.Linear(config.hidden_size, config.padded_vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.embedding

    def forward(self, input_ids, position_ids=None, attention_mask=None, full_attention_mask=None,
                past_key_values=None, inputs_embeds=None, use_cache=None, output_hidden_states=None,
                return_dict=None):
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict
        inputs_embeds = self.embedding(input_ids)
        if full_attention_mask is None:
            if (attention_mask is not None and not attention_mask.all()) or (past_key_values and input_ids.shape[1] != 1):
                full_attention_mask = self.get_masks(input_ids, past_key_values, padding_mask=attention_mask)
            elif input_ids.shape[1] > 1:
                full_attention_mask = self.get_masks(input_ids, past_key_values)
        if position_ids is None:
            position_ids = self.get_position_ids(input_ids, input_ids.device)
        presents = () if use_cache else None
        hidden_states = inputs_embeds
        for index, layer in enumerate(self.layers):
            kv = past_key_values[index] if past_key_values else None
            hidden_states, kv_cache = layer(hidden_states, full_attention_mask, position_ids, kv_cache=kv,
                                            use_cache=use_cache)
            if use_cache:
                presents = presents + (kv_cache,)
        if not return_dict:
            return tuple(v for v in [hidden_states, presents] if v is not None)
        return BaseModelOutputWithPast(last_hidden_state=hidden_states, past_key_values=presents)


class ChatGLMForConditionalGeneration(ChatGLMPreTrainedModel):
    def __init__(self, config, empty_init=True, device=None):
        super().__init__(config)
        self.max_sequence_length = config.max_length
        self.transformer = ChatGLMModel(config, empty_init=empty_init, device=device)
        self.config = config

    def _update_model_kwargs_for_generation(self, outputs: ModelOutput, model_kwargs: Dict[str, Any],
                                            is_encoder_decoder: bool = False,
                                            standardize_cache_format: bool = False) -> Dict[str, Any]:
        model_kwargs["past_key_values"] = self._extract_past_from_model_output(
            outputs, standardize_cache_format=standardize_cache_format
        )
        if "attention_mask" in model_kwargs:
            attention_mask = model_kwargs["attention_mask"]
            model_kwargs["attention_mask"] = torch.cat(
                [attention_mask, attention_mask.new_ones((attention_mask.shape[0], 1))], dim=-1
            )
        if "position_ids" in model_kwargs:
            position_ids = model_kwargs["position_ids"]
            new_position_id = position_ids[..., -1:].clone()
            new_position_id += 1
            model_kwargs["position_ids"] = torch.cat([position_ids, new_position_id], dim=-1)
        model_kwargs["is_first_forward"] = False
        return model_kwargs

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None,
                                      position_ids=None, use_cache=None, is_first_forward=True, **kwargs):
        if position_ids is None:
            position_ids = self.get_position_ids(input_ids, device=input_ids.device)
        if not is_first_forward:
            if past_key_values is not None:
                position_ids = position_ids[..., -1:]
                input_ids = input_ids[:, -1:]
        return {{"input_ids": input_ids, "past_key_values": past_key_values, "position_ids": position_ids,
                "attention_mask": attention_mask, "return_last_logit": True, "use_cache": use_cache}}

    def forward(self, input_ids=None, position_ids=None, attention_mask=None, past_key_values=None,
                inputs_embeds=None, labels=None, use_cache=None, output_attentions=None,
                output_hidden_states=None, return_dict=None, return_last_logit=False):
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict
        outputs = self.transformer(input_ids=input_ids, position_ids=position_ids, attention_mask=attention_mask,
                                   past_key_values=past_key_values, use_cache=use_cache, return_dict=return_dict)
        hidden_states = outputs[0]
        if return_last_logit:
            hidden_states = hidden_states[:, -1:]
        logits = self.transformer.output_layer(hidden_states).float()
        if not return_dict:
            return (logits,) + outputs[1:]
        return CausalLMOutputWithPast(logits=logits, past_key_values=outputs.past_key_values)

    @staticmethod
    def _reorder_cache(past, beam_idx):
        return tuple((k.index_select({batch_dim}, beam_idx.to(k.device)),
                      v.index_select({batch_dim}, beam_idx.to(v.device))) for k, v in past)

    @torch.inference_mode()
    def stream_generate(self, input_ids, generation_config=None, logits_processor=None, stopping_criteria=None,
                        **kwargs):
        # The sampling loop of its own that stream_chat runs, on 4.40's generation helpers.
        generation_config = copy.deepcopy(generation_config or self.generation_config)
        model_kwargs = generation_config.update(**kwargs)
        model_kwargs["use_cache"] = generation_config.use_cache
        eos = generation_config.eos_token_id
        eos = torch.tensor([eos] if isinstance(eos, int) else eos, device=input_ids.device)
        if generation_config.max_new_tokens is not None:
            generation_config.max_length = generation_config.max_new_tokens + input_ids.shape[-1]
        logits_processor = self._get_logits_processor(
            generation_config=generation_config, input_ids_seq_length=input_ids.shape[-1],
            encoder_input_ids=input_ids, prefix_allowed_tokens_fn=None,
            logits_processor=logits_processor if logits_processor is not None else LogitsProcessorList())
        stopping_criteria = self._get_stopping_criteria(
            generation_config=generation_config,
            stopping_criteria=stopping_criteria if stopping_criteria is not None else StoppingCriteriaList())
        logits_warper = self._get_logits_warper(generation_config)
        unfinished = input_ids.new_ones(input_ids.shape[0])
        while True:
            model_inputs = self.prepare_inputs_for_generation(input_ids, **model_kwargs)
            outputs = self(**model_inputs, return_dict=True, output_attentions=False, output_hidden_states=False)
            scores = logits_warper(input_ids, logits_processor(input_ids, outputs.logits[:, -1, :]))
            probs = nn.functional.softmax(scores, dim=-1)
            if generation_config.do_sample:
                next_tokens = torch.multinomial(probs, num_samples=1).squeeze(1)
            else:
                next_tokens = torch.argmax(probs, dim=-1)
            input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
            model_kwargs = self._update_model_kwargs_for_generation(
                outputs, model_kwargs, is_encoder_decoder=self.config.is_encoder_decoder)
            unfinished = unfinished.mul(next_tokens.tile(eos.shape[0], 1).ne(eos.unsqueeze(1)).prod(dim=0))
            yield input_ids
            if unfinished.max() == 0 or stopping_criteria(input_ids, scores).all():
                break
'''

# The character vocabulary both tiny remote tokenizers read (``self.vocab`` over ``_CHARS``).
_CHAR_VOCAB = '''
    @property
    def vocab_size(self):
        return len(self.vocab)

    def get_vocab(self):
        return dict(self.vocab)

    def _tokenize(self, text, **kwargs):
        return [c for c in text.lower() if c in _CHARS]
'''.lstrip("\n")

# ChatGLM's tokenizer: left padding only, and position ids made by its own 4.44-era _pad (no padding_side).
# Characters, not SentencePiece: the model is random, only the shape of the code matters.
_CHATGLM_TOKENIZER = '''
from typing import Dict, List, Optional, Union

from transformers import PreTrainedTokenizer
from transformers.tokenization_utils_base import BatchEncoding, EncodedInput
from transformers.utils import PaddingStrategy

_SPECIAL = ("<pad>", "<unk>", "</s>", "[gMASK]", "sop")
_CHARS = "abcdefghijklmnopqrstuvwxyz "


class ChatGLMTokenizer(PreTrainedTokenizer):
    vocab_files_names = {{}}
    model_input_names = ["input_ids", "attention_mask", "position_ids"]

    def __init__(self, padding_side="left", clean_up_tokenization_spaces=False, **kwargs):
        self.vocab = {{token: i for i, token in enumerate(_SPECIAL + tuple(_CHARS))}}
        self.ids = {{i: token for token, i in self.vocab.items()}}
        super().__init__(padding_side=padding_side, clean_up_tokenization_spaces=clean_up_tokenization_spaces,
                         pad_token="<pad>", unk_token="<unk>", eos_token="</s>", **kwargs)

{char_vocab}
    def _convert_token_to_id(self, token):
        return self.vocab.get(token, 1)

    def _convert_id_to_token(self, index):
        return self.ids.get(index, "<unk>")

    def convert_tokens_to_string(self, tokens):
        return "".join(t for t in tokens if t not in _SPECIAL)

    def save_vocabulary(self, save_directory, filename_prefix=None):
        return ()

    def get_prefix_tokens(self):
        return [self.vocab["[gMASK]"], self.vocab["sop"]]

    def build_inputs_with_special_tokens(self, token_ids_0: List[int], token_ids_1: Optional[List[int]] = None):
        ids = self.get_prefix_tokens() + token_ids_0
        if token_ids_1 is not None:
            ids = ids + token_ids_1 + [self.eos_token_id]
        return ids

    def _pad(
        self,
        encoded_inputs: Union[Dict[str, EncodedInput], BatchEncoding],
        max_length: Optional[int] = None,
        padding_strategy: PaddingStrategy = PaddingStrategy.DO_NOT_PAD,
        pad_to_multiple_of: Optional[int] = None,
        return_attention_mask: Optional[bool] = None,
    ) -> dict:
        assert self.padding_side == "left"
        required_input = encoded_inputs[self.model_input_names[0]]
        seq_length = len(required_input)
        if padding_strategy == PaddingStrategy.LONGEST:
            max_length = len(required_input)
        if max_length is not None and pad_to_multiple_of is not None and (max_length % pad_to_multiple_of != 0):
            max_length = ((max_length // pad_to_multiple_of) + 1) * pad_to_multiple_of
        needs_to_be_padded = padding_strategy != PaddingStrategy.DO_NOT_PAD and len(required_input) != max_length
        if "attention_mask" not in encoded_inputs:
            encoded_inputs["attention_mask"] = [1] * seq_length
        if "position_ids" not in encoded_inputs:
            encoded_inputs["position_ids"] = list(range(seq_length))
        if needs_to_be_padded:
            difference = max_length - len(required_input)
            encoded_inputs["attention_mask"] = [0] * difference + encoded_inputs["attention_mask"]
            encoded_inputs["position_ids"] = [0] * difference + encoded_inputs["position_ids"]
            encoded_inputs[self.model_input_names[0]] = [self.pad_token_id] * difference + required_input
        return encoded_inputs
'''
# Qwen-1's tokenization_qwen.py shape: a direct PreTrainedTokenizer subclass over a vocabulary of its own whose
# texts get no special tokens, so it overrides none of build_inputs_with_special_tokens, get_special_tokens_mask
# or create_token_type_ids_from_sequences (the 4.x base methods add nothing).
_PLAIN_TOKENIZER = '''
from transformers import PreTrainedTokenizer

_CHARS = "abcdefghijklmnopqrstuvwxyz "
_EOD = "<|endoftext|>"


class PlainTokenizer(PreTrainedTokenizer):
    vocab_files_names = {{}}

    def __init__(self, errors="replace", **kwargs):
        self.vocab = {{token: i for i, token in enumerate(tuple(_CHARS) + (_EOD,))}}
        self.ids = {{i: token for token, i in self.vocab.items()}}
        self.errors = errors
        super().__init__(**kwargs)

{char_vocab}
    def _convert_token_to_id(self, token):
        return self.vocab[token]

    def _convert_id_to_token(self, index):
        return self.ids[index]

    def convert_tokens_to_string(self, tokens):
        return "".join(t for t in tokens if t != _EOD)

    def save_vocabulary(self, save_directory, filename_prefix=None):
        return ()
'''


def write_plain_tokenizer(directory: str | Path) -> Path:
    """Lay out a remote tokenizer repo of ``_PLAIN_TOKENIZER`` (pad and eos ``<|endoftext|>``, left padding)."""
    import uuid

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    text = _PLAIN_TOKENIZER.format(char_vocab=_CHAR_VOCAB)
    (directory / "tokenization_plain.py").write_text(f"# hf_genfix repo {uuid.uuid4().hex}\n{text}")
    (directory / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PlainTokenizer", "padding_side": "left", "pad_token": "<|endoftext|>",
        "eos_token": "<|endoftext|>", "auto_map": {"AutoTokenizer": ["tokenization_plain.PlainTokenizer", None]}}))
    return directory


def check_plain_remote_tokenizer() -> dict[str, Any]:
    """A remote tokenizer that adds no special tokens (Qwen-1's shape, ``_PLAIN_TOKENIZER``) encodes as its authors
    meant: each text's ids are its own tokens' ids, and a batch is those rows padded on the left with its pad id."""
    from transformers import AutoTokenizer

    from .decode import UPSTREAM_ERRORS, defect_on_error
    from .generation import left_pad
    from .outcome import DefectObserved

    texts = ["hi there", "hello world again"]
    with remote_repo("plain") as path:
        repo = write_plain_tokenizer(path)
        what = "a remote tokenizer that adds no special tokens"
        with defect_on_error(what, UPSTREAM_ERRORS):
            tokenizer = AutoTokenizer.from_pretrained(str(repo), trust_remote_code=True)
            rows = [tokenizer(text)["input_ids"] for text in texts]
            batch = tokenizer(texts, padding=True)
        expected_rows = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text)) for text in texts]
        if rows != expected_rows:
            raise DefectObserved(f"{what}: encodes {rows}, its tokens are {expected_rows}")
        ids, mask = left_pad(rows, pad_id=tokenizer.pad_token_id, device="cpu")
        for key, expected in (("input_ids", ids), ("attention_mask", mask)):
            if batch[key] != expected.tolist():
                raise DefectObserved(f"{what}: padded batch {key} {batch[key]}, expected {expected.tolist()}")
        return {"rows": rows}


# DeepSeek-V2's mixture of experts as its remote file lays it out: config.model_type "deepseek_v2" (also the
# type of transformers' own class from 5.0), one module per expert (mlp.experts.<i>.gate_proj / up_proj /
# down_proj). The routing is dense here: only the parameter layout matters.
_MOE_CONFIG = '''
from transformers import PretrainedConfig


class DeepseekV2Config(PretrainedConfig):
    model_type = "deepseek_v2"

    def __init__(self, vocab_size=128, hidden_size=32, moe_intermediate_size=16, n_routed_experts=4, **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.moe_intermediate_size = moe_intermediate_size
        self.n_routed_experts = n_routed_experts
        super().__init__(**kwargs)
'''

_MOE_MODELING = '''
import torch
from torch import nn

from transformers.modeling_outputs import CausalLMOutputWithPast
from transformers.modeling_utils import PreTrainedModel

from .configuration_deepseek import DeepseekV2Config


class DeepseekV2MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.moe_intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.moe_intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.moe_intermediate_size, config.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class DeepseekV2MoE(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.experts = nn.ModuleList([DeepseekV2MLP(config) for _ in range(config.n_routed_experts)])
        self.gate = nn.Linear(config.hidden_size, config.n_routed_experts, bias=False)

    def forward(self, x):
        weights = self.gate(x).softmax(-1)
        return sum(weights[..., i:i + 1] * expert(x) for i, expert in enumerate(self.experts))


class DeepseekV2Layer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.mlp = DeepseekV2MoE(config)


class DeepseekV2Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([DeepseekV2Layer(config)])


class DeepseekV2ForCausalLM(PreTrainedModel):
    config_class = DeepseekV2Config

    def __init__(self, config):
        super().__init__(config)
        self.model = DeepseekV2Model(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.5)

    def forward(self, input_ids=None, **kwargs):
        hidden = self.model.embed_tokens(input_ids)
        for layer in self.model.layers:
            hidden = hidden + layer.mlp(hidden)
        return CausalLMOutputWithPast(logits=self.lm_head(hidden))
'''


def write_moe_repo(directory: str | Path) -> Path:
    """Lay out the remote repo of ``_MOE_CONFIG`` / ``_MOE_MODELING`` (code and config, no weights)."""
    import uuid

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    stamp = f"# hf_genfix repo {uuid.uuid4().hex}\n"
    (directory / "configuration_deepseek.py").write_text(stamp + _MOE_CONFIG)
    (directory / "modeling_deepseek.py").write_text(stamp + _MOE_MODELING)
    (directory / "config.json").write_text(json.dumps({
        "model_type": "deepseek_v2", "architectures": ["DeepseekV2ForCausalLM"], "tie_word_embeddings": False,
        "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV2Config",
                     "AutoModelForCausalLM": "modeling_deepseek.DeepseekV2ForCausalLM"}}))
    return directory


def check_remote_moe_reload() -> dict[str, Any]:
    """A remote model of DeepSeek-V2's expert layout (``_MOE_MODELING``), saved next to its code and loaded back
    with ``from_pretrained``, gives the logits of the model it was saved from."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from .reference import assert_close

    with remote_repo("moe") as path:
        repo = write_moe_repo(path)
        config = AutoConfig.from_pretrained(str(repo), trust_remote_code=True)
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config, trust_remote_code=True).float().eval()
        model.save_pretrained(repo)
        what = "a remote model of DeepSeek-V2's expert layout, loaded back"
        again = _from_pretrained(repo, what).float().eval()
        ids = torch.tensor(EQUAL_ROWS)
        with torch.no_grad():
            diff = assert_close(again(input_ids=ids).logits, model(input_ids=ids).logits, what)
        return {"max_logit_diff": diff}


# ---------------------------------------------------------------------------------------------------------------
# Tuple-era families whose past is kept in another layout than [batch, heads, seq, dim]: Qwen-1's structure
# (c_attn / c_proj, a non-persistent buffer in the attention module, a GPT-2-style _init_weights that re-draws
# every "c_proj.weight" it reaches through module.named_parameters()), with the past of each layer held as:
_TUPLE_LAYOUTS = {
    # Qwen-1 (modeling_qwen.py): [batch, seq, heads, dim], concatenated on dim 1, past length from shape[1].
    "qwen": dict(unpack="layer_past[0].transpose(1, 2), layer_past[1].transpose(1, 2)",
                 pack="(k.transpose(1, 2), v.transpose(1, 2))", past_len=".shape[1]",
                 reorder="tuple(tuple(s.index_select(0, beam_idx) for s in layer) for layer in past)"),
    # Merged heads: [batch, seq, hidden] (heads split again on use).
    "merged": dict(unpack="_heads(layer_past[0], self.num_heads), _heads(layer_past[1], self.num_heads)",
                   pack="(_merge(k), _merge(v))", past_len=".shape[1]",
                   reorder="tuple(tuple(s.index_select(0, beam_idx) for s in layer) for layer in past)"),
    # One tensor per layer, key and value stacked: [2, batch, heads, seq, dim] (GPT-2-era code).
    "stacked": dict(unpack="layer_past[0], layer_past[1]", pack="torch.stack((k, v))", past_len=".shape[-2]",
                    reorder="tuple(layer.index_select(1, beam_idx) for layer in past)"),
    # Bloom / Falcon (RefinedWeb) style: batch and heads merged, the key transposed: [batch * heads, dim, seq],
    # the value [batch * heads, seq, dim].
    "bloom": dict(unpack=("layer_past[0].view(bsz, self.num_heads, self.head_dim, -1).transpose(2, 3), "
                          "layer_past[1].view(bsz, self.num_heads, -1, self.head_dim)"),
                  pack=("(k.transpose(2, 3).reshape(bsz * self.num_heads, self.head_dim, -1), "
                        "v.reshape(bsz * self.num_heads, -1, self.head_dim))"), past_len=".shape[-1]",
                  reorder=("tuple(tuple(s.unflatten(0, (beam_idx.shape[0], -1)).index_select(0, beam_idx)"
                           ".flatten(0, 1) for s in layer) for layer in past)")),
}

_LAYOUT_CONFIG = """
from transformers import PretrainedConfig


class QWenConfig(PretrainedConfig):
    model_type = "{name}"

    def __init__(self, vocab_size=128, hidden_size=32, num_attention_heads=4, num_hidden_layers=2,
                 intermediate_size=64, initializer_range=0.2, use_cache=True, pad_token_id=0, eos_token_id=2,
                 tie_word_embeddings=False, **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.num_hidden_layers = num_hidden_layers
        self.intermediate_size = intermediate_size
        self.initializer_range = initializer_range
        self.use_cache = use_cache
        super().__init__(pad_token_id=pad_token_id, eos_token_id=eos_token_id,
                         tie_word_embeddings=tie_word_embeddings, **kwargs)
"""

_LAYOUT_MODELING = """
import math

import torch
from torch import nn

from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast

from .configuration_{name} import QWenConfig
{rotary}

def _heads(x, num_heads):
    return x.view(x.shape[0], x.shape[1], num_heads, -1).transpose(1, 2)


def _merge(x):
    return x.transpose(1, 2).reshape(x.shape[0], x.shape[2], -1)


class QWenAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.c_attn = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.c_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.rotary = TinyRotary(self.head_dim)
        self.register_buffer("masked_bias", torch.tensor(-1e4), persistent=False)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, position_ids=None, use_cache=False):
        bsz, q_len, _ = hidden_states.size()
        q, k, v = self.c_attn(hidden_states).chunk(3, dim=-1)
        q, k, v = (t.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        cos, sin = self.rotary(position_ids)
        q, k = apply_rotary(q, k, cos, sin)
        if layer_past is not None:
            past_k, past_v = {unpack}
            k = torch.cat((past_k, k), dim=2)
            v = torch.cat((past_v, v), dim=2)
        present = {pack} if use_cache else None
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            scores = scores + attention_mask
        probs = nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.c_proj(out), present


class QWenBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = QWenAttention(config)
        self.mlp = TinyMLP(config)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, position_ids=None, use_cache=False):
        attn, present = self.attn(hidden_states, layer_past, attention_mask, position_ids, use_cache)
        hidden_states = hidden_states + attn
        return hidden_states + self.mlp(hidden_states), present


class QWenPreTrainedModel(PreTrainedModel):
    config_class = QWenConfig
    base_model_prefix = "transformer"
    _no_split_modules = ["QWenBlock"]

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
        for name, p in module.named_parameters():
            if name == "c_proj.weight":
                std = self.config.initializer_range / math.sqrt(2 * self.config.num_hidden_layers)
                p.data.normal_(mean=0.0, std=std)


class QWenModel(QWenPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.wte = nn.Embedding(config.vocab_size, config.hidden_size)
        self.h = nn.ModuleList([QWenBlock(config) for _ in range(config.num_hidden_layers)])
        self.post_init()

    def forward(self, input_ids=None, past_key_values=None, attention_mask=None, position_ids=None,
                inputs_embeds=None, use_cache=None, output_attentions=None, output_hidden_states=None,
                return_dict=None):
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict
        batch_size, seq_length = input_ids.shape
        if past_key_values is None:
            past_length = 0
            past_key_values = tuple([None] * len(self.h))
        else:
            past_length = past_key_values[0][0]{past_len}
        if position_ids is None:
            position_ids = torch.arange(past_length, seq_length + past_length, device=input_ids.device).unsqueeze(0)
        hidden_states = self.wte(input_ids)
        mask = torch.full((seq_length, seq_length), torch.finfo(hidden_states.dtype).min).triu(1)
        mask = torch.cat([torch.zeros(seq_length, past_length), mask], dim=-1)[None, None]
        if attention_mask is not None:
            mask = mask + (1.0 - attention_mask.view(batch_size, -1)[:, None, None, :].to(mask.dtype)) * torch.finfo(
                hidden_states.dtype).min
            mask = mask.clamp(min=torch.finfo(hidden_states.dtype).min)
        presents = () if use_cache else None
        for block, layer_past in zip(self.h, past_key_values):
            hidden_states, present = block(hidden_states, layer_past, mask, position_ids, use_cache)
            if use_cache:
                presents = presents + (present,)
        if not return_dict:
            return tuple(v for v in [hidden_states, presents] if v is not None)
        return BaseModelOutputWithPast(last_hidden_state=hidden_states, past_key_values=presents)


class QWenLMHeadModel(QWenPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.transformer = QWenModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.transformer.wte

    def forward(self, input_ids=None, past_key_values=None, attention_mask=None, position_ids=None,
                inputs_embeds=None, labels=None, use_cache=None, output_attentions=None,
                output_hidden_states=None, return_dict=None):
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict
        outputs = self.transformer(input_ids=input_ids, past_key_values=past_key_values,
                                   attention_mask=attention_mask, position_ids=position_ids, use_cache=use_cache,
                                   return_dict=return_dict)
        logits = self.lm_head(outputs[0]).float()
        if not return_dict:
            return (logits,) + outputs[1:]
        return CausalLMOutputWithPast(logits=logits, past_key_values=outputs.past_key_values)

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None,
                                      inputs_embeds=None, **kwargs):
        if past_key_values:
            input_ids = input_ids[:, -1].unsqueeze(-1)
        position_ids = None
        if attention_mask is not None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            position_ids = position_ids[:, -input_ids.shape[1]:]
        return {{"input_ids": input_ids, "past_key_values": past_key_values, "use_cache": kwargs.get("use_cache"),
                "attention_mask": attention_mask, "position_ids": position_ids}}

    @staticmethod
    def _reorder_cache(past, beam_idx):
        return {reorder}
"""


# [batch, heads, seq, dim] (GLM-4V, the later ChatGLM3 revision) or, for chatglm2, [seq, batch, heads, dim]: the
# layout of ChatGLM2 and the first ChatGLM3 releases (cache concatenated on dim 0, past length read from
# shape[0], _reorder_cache selecting on dim 1).
_CHATGLM_LAYOUT = {
    "chatglm3": dict(store="", load="", seq_dim=2, batch_dim=0),
    "chatglm2": dict(store=".permute(2, 0, 1, 3)", load=".permute(1, 2, 0, 3)", seq_dim=0, batch_dim=1),
}


def sources(family: str) -> dict[str, str]:
    """``{file name: text}`` of the family's configuration and modeling files."""
    if family in _CACHE_IMPORTS:
        name, cap = family, {"phi3": "Phi3", "deepseek": "DeepseekV2", "minicpm": "MiniCPM"}[family]
        return {
            f"configuration_{name}.py": _CACHE_CONFIG.format(name=name, Name=cap),
            f"modeling_{name}.py": _CACHE_MODELING.format(
                name=name, Name=cap, imports=_CACHE_IMPORTS[family], mask=_CACHE_MASK[family].rstrip("\n"),
                rotary=_ROTARY, mask_check=_ATTENTION_CHECK.get(family, ""),
            ),
        }
    if family == "internlm2":
        return {"configuration_internlm2.py": _INTERNLM2_CONFIG,
                "modeling_internlm2.py": _INTERNLM2_MODELING.format(rotary=_ROTARY)}
    if family in _TUPLE_LAYOUTS:
        return {f"configuration_{family}.py": _LAYOUT_CONFIG.format(name=family),
                f"modeling_{family}.py": _LAYOUT_MODELING.format(name=family, rotary=_ROTARY,
                                                                 **_TUPLE_LAYOUTS[family])}
    if family in _CHATGLM_LAYOUT:
        return {"configuration_chatglm.py": _CHATGLM3_CONFIG,
                "modeling_chatglm.py": _CHATGLM3_MODELING.format(rotary=_ROTARY, **_CHATGLM_LAYOUT[family]),
                "tokenization_chatglm.py": _CHATGLM_TOKENIZER.format(char_vocab=_CHAR_VOCAB)}
    raise KeyError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")


def _config_json(family: str) -> dict[str, Any]:
    if family in _CACHE_IMPORTS:
        cap = {"phi3": "Phi3", "deepseek": "DeepseekV2", "minicpm": "MiniCPM"}[family]
        return {
            "model_type": family, "architectures": [f"{cap}ForCausalLM"],
            "auto_map": {"AutoConfig": f"configuration_{family}.{cap}Config",
                         "AutoModelForCausalLM": f"modeling_{family}.{cap}ForCausalLM"},
            "vocab_size": _SIZES["vocab_size"], "hidden_size": _SIZES["hidden_size"],
            "num_attention_heads": _SIZES["num_attention_heads"], "num_hidden_layers": _SIZES["layers"],
            "intermediate_size": _SIZES["intermediate_size"],
            # The long-context checkpoints of these families ship a scaling dict keyed "type".
            "rope_scaling": {"type": "linear", "factor": 2.0},
            # MiniCPM ties its output to its input embeddings (with the list-form _tied_weights_keys of 4.x).
            "tie_word_embeddings": family == "minicpm",
        }
    if family in _TUPLE_LAYOUTS:
        return {
            "model_type": family, "architectures": ["QWenLMHeadModel"],
            "auto_map": {"AutoConfig": f"configuration_{family}.QWenConfig",
                         "AutoModelForCausalLM": f"modeling_{family}.QWenLMHeadModel"},
        }
    if family == "internlm2":
        return {
            "model_type": "internlm2", "architectures": ["InternLM2ForCausalLM"],
            "auto_map": {"AutoConfig": "configuration_internlm2.InternLM2Config",
                         "AutoModelForCausalLM": "modeling_internlm2.InternLM2ForCausalLM"},
            # No rope_scaling: plain RoPE, the common case (4.x reads None; 5.x synthesizes default parameters).
            "num_hidden_layers": _SIZES["layers"],
        }
    return {
        "model_type": "chatglm", "architectures": ["ChatGLMModel"],
        "auto_map": {"AutoConfig": "configuration_chatglm.ChatGLMConfig",
                     "AutoModel": "modeling_chatglm.ChatGLMForConditionalGeneration",
                     "AutoModelForCausalLM": "modeling_chatglm.ChatGLMForConditionalGeneration"},
        "num_layers": _SIZES["layers"], "use_cache": True,
    }


def write_family(family: str, directory: str | Path) -> Path:
    """Lay out the family's local remote-code repo in ``directory``."""
    import uuid

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    # transformers caches remote modules by content hash: a fresh module (and classes created under the patches
    # in place now) for every repo written, so that a probe never reuses classes of an earlier state.
    stamp = f"# hf_genfix repo {uuid.uuid4().hex}\n"
    for name, text in sources(family).items():
        (directory / name).write_text(stamp + text)
    (directory / "config.json").write_text(json.dumps(_config_json(family), indent=1))
    if family in _CHATGLM_LAYOUT:
        (directory / "tokenizer_config.json").write_text(json.dumps({
            "tokenizer_class": "ChatGLMTokenizer", "padding_side": "left",
            "auto_map": {"AutoTokenizer": ["tokenization_chatglm.ChatGLMTokenizer", None]}}, indent=1))
    return directory


def load_family(directory: str | Path, seed: int = 0) -> Any:
    """The family's model loaded as users load a Hub repo: ``AutoConfig.from_pretrained(trust_remote_code=True)``
    then ``AutoModelForCausalLM.from_config(trust_remote_code=True)`` (float32, eval, eager attention)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(str(directory), trust_remote_code=True)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, trust_remote_code=True)
    return model.float().eval()


# Equal lengths for chatglm3: its position ids ignore padding unless its tokenizer supplies them (it does; the
# tiny repo has no tokenizer), so a left-padded batch is not a scenario its authors supported.
EQUAL_ROWS = ((17, 44, 91, 23, 5), (60, 12, 77, 38, 101))


def rows_for(family: str) -> tuple[tuple[int, ...], ...]:
    from .decode import DEFAULT_ROWS

    return EQUAL_ROWS if family.startswith("chatglm") else DEFAULT_ROWS


@contextlib.contextmanager
def remote_repo(stem: str, directory: str | Path | None = None) -> Iterator[Path]:
    """A fresh path ``<stem>_<random>`` for a tiny remote-code repo, in a temporary folder (or in ``directory``).
    Afterwards the temporary folder is gone, and so is the copy of the repo's code that ``trust_remote_code`` made
    in ``<HF_MODULES_CACHE>/transformers_modules/<folder name>`` (before, every ``hf-genfix doctor`` left about 44
    such folders behind)."""
    import tempfile
    import uuid

    with tempfile.TemporaryDirectory(prefix=f"genfix_{stem}_") as tmp:
        # A folder name of its own per call: two processes probing at once (tox p) would otherwise overwrite each
        # other's copies in the modules cache.
        path = Path(directory or tmp) / f"{stem}_{uuid.uuid4().hex[:12]}"
        try:
            yield path
        finally:
            forget_module_copy(path)


def forget_module_copy(repo: Path) -> None:
    """Remove ``<HF_MODULES_CACHE>/transformers_modules/<repo's folder name>`` (what loading the local repo with
    ``trust_remote_code`` copied there; 4.57 and 5.x name it so). The modules already imported stay usable."""
    import shutil
    import sys

    loader = sys.modules.get("transformers.dynamic_module_utils")
    if loader is None:  # nothing loaded remote code in this process
        return
    sanitize = getattr(loader, "_sanitize_module_name", lambda name: name)
    cache = Path(getattr(loader, "HF_MODULES_CACHE")) / getattr(loader, "TRANSFORMERS_DYNAMIC_MODULE_NAME",
                                                                "transformers_modules")
    for name in {repo.name, sanitize(repo.name)}:
        if name and (cache / name).is_dir():
            shutil.rmtree(cache / name, ignore_errors=True)


@contextlib.contextmanager
def _family_repo(family: str, directory: str | Path | None = None) -> Iterator[Path]:
    """The family's repo, written in a temporary folder (or ``directory``), gone afterwards (``remote_repo``)."""
    with remote_repo(family, directory) as path:
        yield write_family(family, path)


def _loaded(family: str, repo: Path) -> Any:
    """``load_family``; a failure to load (an import or config error of the remote code) is a defect."""
    from .decode import UPSTREAM_ERRORS, defect_on_error

    with defect_on_error(f"{family}: loading the remote code fails", (ImportError, KeyError, *UPSTREAM_ERRORS)):
        return load_family(repo)


def check_family(family: str, directory: str | Path | None = None, max_new_tokens: int = 4,
                 loads: int = 1, rows: Sequence[Sequence[int]] | None = None) -> dict[str, Any]:
    """Write, load and check one family: greedy ``generate()`` on a batch equals greedy decoding by full no-cache
    forwards, and after the prefill each forward gets one new token and the cache (``check_legacy_generate``).
    ``loads=2`` checks the model of a second load of the repo in the process (auto classes register the first);
    ``rows`` replaces the family's batch (``EQUAL_ROWS``: no padding, an all-ones mask)."""
    from .legacy import check_legacy_generate

    with _family_repo(family, directory) as repo:
        for _ in range(loads):
            model = _loaded(family, repo)
        return check_legacy_generate(model, rows=rows or rows_for(family), max_new_tokens=max_new_tokens,
                                     tuple_seq_dim=_tuple_seq_dim(family))


def _tuple_seq_dim(family: str) -> int:
    """Where the sequence is in ``past_key_values[0][0]`` of the family's tuples (5.0.0 hands them over)."""
    if family in _CHATGLM_LAYOUT:
        return _CHATGLM_LAYOUT[family]["seq_dim"]
    return {"qwen": 1, "merged": 1, "bloom": -1}.get(family, -2)


def check_family_forward(family: str) -> dict[str, Any]:
    """A plain forward, as a user calls it (``model(input_ids=...)``, no ``use_cache``), equals the no-cache
    reference's logits for each row."""
    import torch

    from .decode import defect_on_error
    from .reference import assert_close, reference_logits

    with _family_repo(family) as repo:
        model = _loaded(family, repo)
        worst = 0.0
        for row in rows_for(family):
            with defect_on_error(f"{family}: model(input_ids)"), torch.no_grad():
                logits = model(input_ids=torch.tensor([row])).logits[0]
            worst = max(worst, assert_close(logits, reference_logits(model, row), f"{family}: model(input_ids)"))
        return {"max_logit_diff": worst}


def check_family_tied(family: str) -> dict[str, Any]:
    """The family's model builds with its output embeddings tied to its input embeddings (what 4.x's
    ``tie_weights`` did for ``tie_word_embeddings``), and generates like the reference (``check_family``)."""
    from .outcome import DefectObserved

    with _family_repo(family) as repo:
        model = _loaded(family, repo)
        if model.get_output_embeddings().weight is not model.get_input_embeddings().weight:
            raise DefectObserved(f"{family}: tie_word_embeddings is set but the output embeddings are not tied")
    return check_family(family)


@contextlib.contextmanager
def _saved_and_loaded(family: str) -> Iterator[tuple[Any, Any]]:
    """(the family's model, the same model saved next to its code and loaded back with ``from_pretrained`` as a Hub
    repo is)."""
    with _family_repo(family) as repo:
        model = _loaded(family, repo)
        model.save_pretrained(repo)
        yield model, _from_pretrained(repo, f"{family}: from_pretrained of its saved repo")


def _from_pretrained(repo: Path, what: str) -> Any:
    """``AutoModelForCausalLM.from_pretrained(repo, trust_remote_code=True)``; an upstream error is the defect."""
    from transformers import AutoModelForCausalLM

    from .decode import defect_on_error
    from .outcome import ProbeSkipped

    try:
        with defect_on_error(what):
            return AutoModelForCausalLM.from_pretrained(str(repo), trust_remote_code=True)
    except NameError as exc:  # 4.51.0: from_pretrained refers to accelerate's init_empty_weights unimported
        raise ProbeSkipped(f"from_pretrained itself fails on this release: {exc}") from exc


def check_family_reload(family: str) -> dict[str, Any]:
    """The family's model, saved and loaded back with ``from_pretrained``, holds exactly every tensor that was saved
    and gives the logits of the model it was saved from."""
    import torch

    from .outcome import DefectObserved
    from .reference import assert_close

    with _saved_and_loaded(family) as (model, again):
        saved, loaded = model.state_dict(), again.state_dict()
        wrong = sorted(k for k, v in saved.items() if k not in loaded or not torch.equal(loaded[k].to(v), v))
        if wrong:
            worst = max((float((loaded[k].to(saved[k]) - saved[k]).abs().max()) for k in wrong if k in loaded),
                        default=float("nan"))
            raise DefectObserved(f"{family}: the model loaded back differs from the saved one in {len(wrong)} of "
                                 f"{len(saved)} tensors, e.g. {wrong[:3]} (max |diff| {worst:.3g})",
                                 tensors=wrong)
        ids = torch.tensor(rows_for(family)[:1])
        with torch.no_grad():
            expected = model(input_ids=ids, use_cache=False).logits
            diff = assert_close(again.float().eval()(input_ids=ids, use_cache=False).logits, expected,
                                f"{family}: the model loaded back")
        return {"max_logit_diff": diff, "tensors": len(saved)}


def check_family_reload_buffers(family: str) -> dict[str, Any]:
    """The family's model, saved and loaded back with ``from_pretrained``, has the buffers its ``__init__`` computes
    (not in the checkpoint) with the values of the model it was saved from.

    Only the buffers: on 5.0 - 5.12 (not 5.2) the loader also lets a 4.x ``_init_weights`` overwrite the loaded
    weights, a defect of its own (``remote-code-init-weights``, ``check_family_reload``)."""
    import torch

    from .outcome import DefectObserved

    with _saved_and_loaded(family) as (model, again):
        saved, loaded = dict(model.named_buffers()), dict(again.named_buffers())
        wrong = [k for k, v in saved.items() if k not in loaded or not torch.equal(loaded[k].to(v), v)]
        if wrong:
            worst = max(float((loaded[k].to(saved[k]) - saved[k]).abs().max()) for k in wrong if k in loaded)
            raise DefectObserved(f"{family}: after from_pretrained, buffers {wrong} differ from the saved model's "
                                 f"(max |diff| {worst:.3g})")
        return {"buffers": len(saved)}


def check_family_beam(family: str, num_beams: int = 2, max_new_tokens: int = 5) -> dict[str, Any]:
    """Beam search on the family's model (equal-length rows) gives the sequences of the same beam search without
    a cache, where every step is a full forward over the whole sequence."""
    import torch

    from .decode import defect_on_error
    from .outcome import DefectObserved

    with _family_repo(family) as repo:
        model = _loaded(family, repo)
        ids = torch.tensor(EQUAL_ROWS)
        kwargs = dict(num_beams=num_beams, do_sample=False, max_new_tokens=max_new_tokens, pad_token_id=0,
                      attention_mask=torch.ones_like(ids))
        what = f"{family}: generate(num_beams={num_beams})"
        with torch.no_grad():
            reference = model.generate(ids, use_cache=False, **kwargs)
            with defect_on_error(what):
                cached = model.generate(ids, use_cache=True, **kwargs)
        if not torch.equal(cached, reference):
            raise DefectObserved(f"{what} with its cache gives {cached.tolist()}, without it {reference.tolist()}")
        return {"sequences": cached.tolist()}


def greedy_reference(model: Any, row: Sequence[int], steps: int) -> list[int]:
    """The tokens greedy decoding picks after ``row``, each from a full no-cache forward over the sequence."""
    from .reference import reference_logits

    tokens = list(row)
    for _ in range(steps):
        tokens.append(int(reference_logits(model, tokens)[-1].argmax()))
    return tokens[len(row):]


def check_family_stream(family: str, max_new_tokens: int = 4) -> dict[str, Any]:
    """The ChatGLM families' own sampling loop, ``stream_generate`` (what ``stream_chat`` runs), greedy on an
    equal-length batch: what it yields last equals greedy decoding by full no-cache forwards."""
    import torch

    from .decode import defect_on_error
    from .outcome import DefectObserved

    with _family_repo(family) as repo:
        model = _loaded(family, repo)
        ids = torch.tensor(EQUAL_ROWS)
        what = f"{family}: stream_generate"
        with defect_on_error(what):
            *_, last = model.stream_generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                             max_new_tokens=max_new_tokens)
        got = last[:, ids.shape[1]:].tolist()
        expected = [greedy_reference(model, row, max_new_tokens) for row in EQUAL_ROWS]
        if got != expected:
            raise DefectObserved(f"{what} gives {got}, greedy no-cache decoding {expected}")
        return {"stream_sequences": got}


def check_family_tokenizer(family: str, max_new_tokens: int = 4) -> dict[str, Any]:
    """The ChatGLM families' tokenizer encodes a batch as its authors meant (each row's own encoding, padded on
    the left, with position ids counting its real tokens), and ``generate()`` from that batch, position ids
    included, equals the no-cache reference of each unpadded row."""
    from transformers import AutoTokenizer

    from .decode import UPSTREAM_ERRORS, defect_on_error
    from .generation import check_rows_against_reference, generate_steps, left_pad
    from .outcome import DefectObserved

    texts = ["hi there", "hello world again"]
    with _family_repo(family) as repo:
        model = _loaded(family, repo)
        what = f"{family}: its remote tokenizer"
        with defect_on_error(what, (AssertionError, *UPSTREAM_ERRORS)):
            tokenizer = AutoTokenizer.from_pretrained(str(repo), trust_remote_code=True)
            rows = [tokenizer(text)["input_ids"] for text in texts]
            batch = tokenizer(texts, padding=True, return_tensors="pt")
        ids, mask = left_pad(rows, pad_id=tokenizer.pad_token_id, device="cpu")
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        for key, expected in (("input_ids", ids), ("attention_mask", mask), ("position_ids", positions)):
            if batch[key].tolist() != expected.tolist():
                raise DefectObserved(f"{what}: padded batch {key} {batch[key].tolist()}, expected "
                                     f"{expected.tolist()}")
        what = f"{family}: generate from its tokenizer's batch"
        with defect_on_error(what):
            run = generate_steps(model, batch["input_ids"], batch["attention_mask"], max_new_tokens=max_new_tokens,
                                 pad_token_id=tokenizer.pad_token_id, position_ids=batch["position_ids"])
        figures = check_rows_against_reference(model, rows, run, what)
        return {**figures, "rows": rows}
