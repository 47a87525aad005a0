from transformers import PretrainedConfig


class DeepseekV2Config(PretrainedConfig):
    model_type = "deepseek_v2"

    def __init__(self, vocab_size=128, hidden_size=32, moe_intermediate_size=16, n_routed_experts=4, **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.moe_intermediate_size = moe_intermediate_size
        self.n_routed_experts = n_routed_experts
        super().__init__(**kwargs)
