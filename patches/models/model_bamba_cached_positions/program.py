"""The plain program that meets ``model-bamba-cached-positions``: a hand-written decoding loop on a tiny Bamba,
each step fed with the cache and no positions.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, and requires the patch installed (``applied(id)`` says whether a
patch is).
"""

from transformers import BambaForCausalLM


def run(repo, applied):
    import torch
    from transformers import BambaConfig, BambaForCausalLM
    config = BambaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, attn_layer_indices=[1], mamba_n_heads=8,
                         mamba_d_head=8, mamba_d_state=16, mamba_chunk_size=16)
    model = BambaForCausalLM(config).eval()
    with torch.no_grad():
        out = model(torch.tensor([[3, 4, 5, 6]]), use_cache=True)
        cache = out.past_key_values if hasattr(out, "past_key_values") else out.cache
        token = out.logits[:, -1:].argmax(-1)
        for _ in range(3):
            out = model(token, past_key_values=cache, use_cache=True)
            token = out.logits[:, -1:].argmax(-1)
