"""The plain program that meets ``model-nemotron-h-step-dt-limit``: greedy generate() on a tiny NemotronH.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, and requires the patch installed (``applied(id)`` says whether a
patch is).
"""

from transformers import NemotronHConfig, NemotronHForCausalLM


def run(repo, applied):
    import torch

    config = NemotronHConfig(vocab_size=128, hidden_size=32, layers_block_type=["linear_attention", "full_attention"],
                             num_attention_heads=4, num_key_value_heads=2, head_dim=8, intermediate_size=64,
                             mamba_num_heads=8, mamba_head_dim=8, n_groups=1, ssm_state_size=16, chunk_size=16,
                             time_step_min=0.05)
    model = NemotronHForCausalLM(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12]])
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False)
