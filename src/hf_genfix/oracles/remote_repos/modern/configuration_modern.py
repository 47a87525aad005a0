from transformers import LlamaConfig


class ModernConfig(LlamaConfig):
    model_type = "modern_remote"
