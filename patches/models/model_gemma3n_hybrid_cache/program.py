"""The plain program that meets ``model-gemma3n-hybrid-cache``: generate() with cache_implementation='hybrid' on a
tiny Gemma-3n text model (window 4) whose last layer shares keys and values, a prompt past the window.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, and requires the patch installed (``applied(id)`` says whether a
patch is).
"""

from transformers import Gemma3nForCausalLM, Gemma3nTextConfig


def run(repo, applied):
    import torch
    config = Gemma3nTextConfig(vocab_size=128, vocab_size_per_layer_input=128, hidden_size=32, intermediate_size=64,
                               num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                               hidden_size_per_layer_input=8, laurel_rank=4, activation_sparsity_pattern=[0.0] * 3,
                               layer_types=["full_attention", "sliding_attention", "sliding_attention"],
                               num_kv_shared_layers=1, sliding_window=4, pad_token_id=0, bos_token_id=1,
                               eos_token_id=2)
    model = Gemma3nForCausalLM(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12]])
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False,
                   cache_implementation='hybrid')
