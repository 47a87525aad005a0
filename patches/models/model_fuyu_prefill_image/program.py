"""The plain program that meets ``model-fuyu-prefill-image``: Fuyu's cached generate() on an image prompt.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import FuyuForCausalLM


def run(repo, applied):
    import torch
    from transformers import AutoConfig, FuyuForCausalLM
    config = AutoConfig.from_pretrained(repo + "/fuyu")
    model = FuyuForCausalLM(config).eval()
    image = config.image_token_id
    ids = torch.tensor([[image] * 16 + [3, 4, 5, 6]])  # 16 placeholders: a 16x16 image in 4x4 patches
    model.generate(ids, attention_mask=torch.ones_like(ids), image_patches=torch.rand(1, 16, 48), max_new_tokens=3,
                   do_sample=False, suppress_tokens=[image])
