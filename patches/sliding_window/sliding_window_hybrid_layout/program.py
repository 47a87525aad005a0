"""The plain program that meets ``sliding-window-hybrid-layout``: generate(cache_implementation="hybrid") on a tiny
Mistral (sliding window 8) past the window.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import MistralForCausalLM


def run(repo, applied):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(repo + "/mistral")).eval()
    ids = torch.tensor([list(range(3, 15))])
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False,
                   cache_implementation="hybrid", pad_token_id=0)
