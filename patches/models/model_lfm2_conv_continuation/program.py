"""The plain program that meets ``model-lfm2-conv-continuation``: a second turn continuing generate()'s returned
cache on a tiny LFM2.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, and requires the patch installed (``applied(id)`` says whether a
patch is).
"""

from transformers import Lfm2Config, Lfm2ForCausalLM


def run(repo, applied):
    import torch
    config = Lfm2Config(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, layer_types=["conv", "full_attention"],
                  pad_token_id=0, bos_token_id=1, eos_token_id=2)  # one convolution layer in 2
    model = Lfm2ForCausalLM(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12]])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False,
                         return_dict_in_generate=True)
    more = torch.cat([out.sequences, torch.tensor([[20, 21, 22]])], dim=1)
    model.generate(more, attention_mask=torch.ones_like(more), past_key_values=out.past_key_values,
                   max_new_tokens=2, do_sample=False)
