from torch import nn
from transformers import GenerationMixin, LlamaModel, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

from .configuration_modern import ModernConfig


class ModernPreTrainedModel(PreTrainedModel):
    config_class = ModernConfig
    base_model_prefix = "model"


class ModernForCausalLM(ModernPreTrainedModel, GenerationMixin):
    def __init__(self, config):
        super().__init__(config)
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def forward(self, input_ids=None, attention_mask=None, past_key_values=None, use_cache=None, **kwargs):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=past_key_values,
                         use_cache=use_cache, **kwargs)
        return CausalLMOutputWithPast(logits=self.lm_head(out.last_hidden_state),
                                      past_key_values=out.past_key_values)
