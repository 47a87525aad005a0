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
