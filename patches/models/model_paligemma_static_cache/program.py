"""The plain program that meets ``model-paligemma-static-cache``: PaliGemma's generate() on an image prompt with a
static cache.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import PaliGemmaForConditionalGeneration


def run(repo, applied):
    import torch
    from transformers import AutoConfig, PaliGemmaForConditionalGeneration
    config = AutoConfig.from_pretrained(repo + "/paligemma")
    model = PaliGemmaForConditionalGeneration(config).eval()
    vision = config.vision_config
    image = getattr(config, "image_token_id", None) or config.image_token_index
    ids = torch.tensor([[image] * (vision.image_size // vision.patch_size) ** 2 + [3, 4, 5, 6]])
    pixels = torch.randn(1, 3, vision.image_size, vision.image_size)
    # suppress_tokens: a generated image token would be counted against the image's features on the next uncached
    # step (upstream's ValueError, with or without hf_genfix; seen once in CI on 4.46.3)
    model.generate(ids, attention_mask=torch.ones_like(ids), pixel_values=pixels, token_type_ids=torch.zeros_like(ids),
                   max_new_tokens=3, do_sample=False, suppress_tokens=[image], cache_implementation='static')
