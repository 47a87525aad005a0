"""The plain program that meets ``model-mrope-vision-positions``: Qwen2-VL's generate() on one image.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import Qwen2VLForConditionalGeneration


def run(repo, applied):
    import inspect
    import torch
    from transformers import AutoConfig, Qwen2VLForConditionalGeneration
    model = Qwen2VLForConditionalGeneration(AutoConfig.from_pretrained(repo + "/qwen2-vl")).eval()
    ids = torch.tensor([[1, 5, 6, 120, 122, 122, 122, 122, 121, 7, 8]])
    image = dict(pixel_values=torch.rand(16, 24), image_grid_thw=torch.tensor([[1, 4, 4]]))
    if "mm_token_type_ids" in inspect.signature(model.forward).parameters:
        image["mm_token_type_ids"] = (ids == 122).long()
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=2, do_sample=False, **image)
