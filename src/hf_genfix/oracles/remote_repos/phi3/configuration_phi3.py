from transformers import PretrainedConfig


class Phi3Config(PretrainedConfig):
    model_type = "phi3"

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
            raise ValueError(f"rope_scaling type must be linear or dynamic, got {scaling_type}")
