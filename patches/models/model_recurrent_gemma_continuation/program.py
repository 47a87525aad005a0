"""The plain program that meets ``model-recurrent-gemma-continuation``: greedy generate() on a tiny RecurrentGemma.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import RecurrentGemmaConfig, RecurrentGemmaForCausalLM


def run(repo, applied):
    import torch
    config = RecurrentGemmaConfig(num_hidden_layers=3, vocab_size=128, hidden_size=32, intermediate_size=64,
                                  num_attention_heads=2, lru_width=32, attention_window_size=16)
    model = RecurrentGemmaForCausalLM(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9]])
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False)
