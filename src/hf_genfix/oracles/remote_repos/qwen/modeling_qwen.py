import math

import torch
from torch import nn

from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast

from .configuration_qwen import QWenConfig

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
            past_k, past_v = layer_past[0].transpose(1, 2), layer_past[1].transpose(1, 2)
            k = torch.cat((past_k, k), dim=2)
            v = torch.cat((past_v, v), dim=2)
        present = (k.transpose(1, 2), v.transpose(1, 2)) if use_cache else None
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
            past_length = past_key_values[0][0].shape[1]
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
        return {"input_ids": input_ids, "past_key_values": past_key_values, "use_cache": kwargs.get("use_cache"),
                "attention_mask": attention_mask, "position_ids": position_ids}

    @staticmethod
    def _reorder_cache(past, beam_idx):
        return tuple(tuple(s.index_select(0, beam_idx) for s in layer) for layer in past)
