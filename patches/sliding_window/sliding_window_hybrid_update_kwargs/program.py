"""The plain program that meets ``sliding-window-hybrid-update-kwargs``: greedy generate() on a tiny Gemma-2 past
its window.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import AutoModelForCausalLM


def run(repo, applied):
    import torch
    from transformers import AutoConfig
    config = AutoConfig.from_pretrained(repo + "/gemma2")
    model = AutoModelForCausalLM.from_config(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]])
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False)
