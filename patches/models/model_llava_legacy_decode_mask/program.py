"""The plain program that meets ``model-llava-legacy-decode-mask``: LLaVA's generate() on a left-padded batch of two
image prompts.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import LlavaForConditionalGeneration


def run(repo, applied):
    import torch
    from transformers import AutoConfig, LlavaForConditionalGeneration
    config = AutoConfig.from_pretrained(repo + "/llava")
    model = LlavaForConditionalGeneration(config).eval()
    size = config.vision_config.image_size
    ids = torch.tensor([[0, 0, 5] + [config.image_token_index] * config.image_seq_length + [6, 7],
                        [4, 5, 6] + [config.image_token_index] * config.image_seq_length + [6, 7]])
    mask = torch.tensor([[0, 0] + [1] * (ids.shape[1] - 2), [1] * ids.shape[1]])
    model.generate(ids, attention_mask=mask, pixel_values=torch.rand(2, 3, size, size), max_new_tokens=2,
                   do_sample=False, pad_token_id=0)
