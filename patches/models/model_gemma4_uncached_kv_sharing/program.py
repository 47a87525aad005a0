"""The plain program that meets ``model-gemma4-uncached-kv-sharing``: a forward with ``use_cache=False`` on a tiny
Gemma-4 text model whose last two layers share keys and values.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, and requires the patch installed (``applied(id)`` says whether a
patch is).
"""

from transformers import Gemma4ForCausalLM, Gemma4TextConfig


def run(repo, applied):
    import torch
    config = Gemma4TextConfig(vocab_size=128, vocab_size_per_layer_input=128, hidden_size=32, intermediate_size=64,
                              num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                              global_head_dim=8, hidden_size_per_layer_input=8,
                              layer_types=["sliding_attention", "full_attention", "sliding_attention",
                                           "full_attention"],
                              num_kv_shared_layers=2, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    model = Gemma4ForCausalLM(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12]])
    model(ids, use_cache=False)
