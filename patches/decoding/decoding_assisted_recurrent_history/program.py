"""A plain program that meets ``decoding-assisted-recurrent-history``: a tiny Mamba drafts its continuation by
prompt lookup (a prompt that repeats itself, so drafts are found and some are rejected). Its imports are its top
level (doctor runs it in a fresh interpreter); ``run(repo, applied)`` is the call, after them.
"""

from transformers import MambaForCausalLM


def run(repo, applied):
    import torch
    from transformers import MambaConfig

    tiny = MambaForCausalLM(MambaConfig(vocab_size=64, hidden_size=16, state_size=4, num_hidden_layers=2)).eval()
    prompt = torch.tensor([[3, 4, 5, 6] * 2 + [3, 4]])
    tiny.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=4, do_sample=False,
                  prompt_lookup_num_tokens=3)
