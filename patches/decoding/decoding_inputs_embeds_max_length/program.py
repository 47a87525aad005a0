"""The plain program that meets ``decoding-inputs-embeds-max-length``: generate() from a prompt given as embeddings,
with max_length.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import LlamaForCausalLM


def run(repo, applied):
    import torch
    from transformers import LlamaConfig
    config = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2)
    model = LlamaForCausalLM(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8]])
    embeds = model.get_input_embeddings()(ids).detach()
    model.generate(inputs_embeds=embeds, attention_mask=torch.ones_like(ids), max_length=10, do_sample=False)
