"""The plain program that meets ``model-kosmos2-padded-positions``: Kosmos-2's generate() on a left-padded batch of two
image prompts.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import Kosmos2ForConditionalGeneration


def run(repo, applied):
    import torch
    from transformers import AutoConfig, Kosmos2ForConditionalGeneration
    config = AutoConfig.from_pretrained(repo + "/kosmos-2")
    model = Kosmos2ForConditionalGeneration(config).eval()
    ids = torch.tensor([[0, 0, 1, 120, 122, 122, 122, 122, 121, 5], [1, 120, 122, 122, 122, 122, 121, 5, 6, 7]])
    model.generate(pixel_values=torch.rand(2, 3, 16, 16), input_ids=ids, attention_mask=(ids != 0).long(),
                   image_embeds_position_mask=(ids == 122).long(), max_new_tokens=3, do_sample=False)
