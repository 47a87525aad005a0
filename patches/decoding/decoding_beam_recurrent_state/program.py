"""The plain program that meets ``decoding-beam-recurrent-state``: beam search on a tiny Mamba.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import MambaForCausalLM


def run(repo, applied):
    import torch
    from transformers import MambaConfig

    config = MambaConfig(vocab_size=64, hidden_size=16, state_size=4, num_hidden_layers=2)
    model = MambaForCausalLM(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8]])
    model.generate(ids, num_beams=2, max_new_tokens=3, do_sample=False, use_cache=False)
