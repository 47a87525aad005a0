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
