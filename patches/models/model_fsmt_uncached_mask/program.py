"""The plain program that meets ``model-fsmt-uncached-mask``: FSMT's generate(use_cache=False) from a config built
directly.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import FSMTForConditionalGeneration


def run(repo, applied):
    import torch
    from transformers import AutoConfig, FSMTForConditionalGeneration
    model = FSMTForConditionalGeneration(AutoConfig.from_pretrained(repo + "/fsmt-direct")).eval()
    src = torch.tensor([[5, 6, 7, 8, 9]])
    model.generate(src, attention_mask=torch.ones_like(src), max_new_tokens=3, do_sample=False, use_cache=False,
                   decoder_start_token_id=1, pad_token_id=0)
