"""The plain program that meets ``model-mamba2-batch``: a cached generate() on a tiny Mamba-2, one row.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, and requires the patch installed (``applied(id)`` says whether a
patch is).
"""

from transformers import Mamba2Config, Mamba2ForCausalLM


def run(repo, applied):
    import torch

    config = Mamba2Config(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_heads=8, head_dim=8, n_groups=1,
                          state_size=8, expand=2, chunk_size=4)
    model = Mamba2ForCausalLM(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12]])
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False)
