"""The plain program that meets ``model-xlstm-continuation``: a second turn continuing generate()'s returned cache on a
tiny xLSTM, passed as its own cache argument (``cache_params``).

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, and requires the patch installed (``applied(id)`` says whether a
patch is).
"""

from transformers import xLSTMConfig, xLSTMForCausalLM


def run(repo, applied):
    import torch
    config = xLSTMConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_heads=4, qk_dim_factor=2.0,
                         v_dim_factor=2.0, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    model = xLSTMForCausalLM(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12]])
    out = model.generate(ids, max_new_tokens=3, do_sample=False, return_dict_in_generate=True)
    more = torch.cat([out.sequences, torch.tensor([[20, 21, 22]])], dim=1)
    model.generate(more, cache_params=out.past_key_values, max_new_tokens=2, do_sample=False)
