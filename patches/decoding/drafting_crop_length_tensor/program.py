"""The plain program that meets ``drafting-crop-length-tensor``: prompt-lookup generate() on a tiny InklingText
(sliding window 8) with a prompt longer than the window.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import InklingForCausalLM


def run(repo, applied):
    import torch
    from transformers import InklingTextConfig

    config = InklingTextConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=2, num_key_value_heads=1, head_dim=16, swa_num_attention_heads=2,
                               swa_num_key_value_heads=1, swa_head_dim=16, sliding_window=8,
                               moe_intermediate_size=16, n_routed_experts=4, num_experts_per_tok=2,
                               n_shared_experts=1)
    model = InklingForCausalLM(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8] * 3])
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=5, do_sample=False,
                   prompt_lookup_num_tokens=3, eos_token_id=None, pad_token_id=0)
