"""The plain program that meets ``decoding-prefill-chunks-inputs``: generate() on a tiny Llama with
prefill_chunk_size=4 and the prompt given as ids plus embeddings.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import LlamaForCausalLM


def run(repo, applied):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    config = AutoConfig.from_pretrained(repo + "/llama")
    model = AutoModelForCausalLM.from_config(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]])
    embeds = model.get_input_embeddings()(ids).detach() * 1.5
    model.generate(ids, inputs_embeds=embeds, attention_mask=torch.ones_like(ids), max_new_tokens=3,
                   do_sample=False, prefill_chunk_size=4)
