"""The plain program that meets ``model-nemotron-h-chunk-scan``: a cached generate() on a tiny NemotronH whose prompt
spans several Mamba chunks.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, and requires the patch installed (``applied(id)`` says whether a
patch is).
"""

from transformers import NemotronHConfig, NemotronHForCausalLM


def run(repo, applied):
    import torch

    # one Mamba layer and one attention layer ("M*"), chunks of 4 tokens
    config = NemotronHConfig(vocab_size=128, hidden_size=32, hybrid_override_pattern="M*", num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, head_dim=8, intermediate_size=64,
                             mamba_num_heads=8, mamba_head_dim=8, n_groups=1, ssm_state_size=16, chunk_size=4)
    model = NemotronHForCausalLM(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12]])
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False)
