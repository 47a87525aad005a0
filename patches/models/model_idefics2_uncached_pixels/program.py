"""The plain program that meets ``model-idefics2-uncached-pixels``: Idefics2's generate(use_cache=False) on one image.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import Idefics2ForConditionalGeneration


def run(repo, applied):
    import torch
    from transformers import AutoConfig, Idefics2ForConditionalGeneration
    model = Idefics2ForConditionalGeneration(AutoConfig.from_pretrained(repo + "/idefics2")).eval()
    ids = torch.tensor([[1, 122, 122, 122, 122, 60, 85, 28]])
    model.generate(ids, attention_mask=torch.ones_like(ids), pixel_values=torch.rand(1, 1, 3, 16, 16),
                   pixel_attention_mask=torch.ones(1, 1, 16, 16, dtype=torch.bool), use_cache=False,
                   max_new_tokens=3, do_sample=False, suppress_tokens=[122])  # no generated image token (as PaliGemma)
