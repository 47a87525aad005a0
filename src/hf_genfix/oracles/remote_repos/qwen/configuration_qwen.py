from transformers import PretrainedConfig


class QWenConfig(PretrainedConfig):
    model_type = "qwen"

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
