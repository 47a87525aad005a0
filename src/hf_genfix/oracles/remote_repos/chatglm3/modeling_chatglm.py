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
            k = torch.cat((cache_k, k), dim=2)
            v = torch.cat((cache_v, v), dim=2)
        kv_cache = (k, v) if use_cache else None
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
            past_length = past_key_values[0][0].shape[2]
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
        return {"input_ids": input_ids, "past_key_values": past_key_values, "position_ids": position_ids,
                "attention_mask": attention_mask, "return_last_logit": True, "use_cache": use_cache}

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
        return tuple((k.index_select(0, beam_idx.to(k.device)),
                      v.index_select(0, beam_idx.to(v.device))) for k, v in past)

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
