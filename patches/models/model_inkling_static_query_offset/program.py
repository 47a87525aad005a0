"""The plain program that meets ``model-inkling-static-query-offset``: generate() on a tiny Inkling text model whose
layers are "hybrid" (linear and full attention), with a static cache.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import InklingForCausalLM


def run(repo, applied):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    config = AutoConfig.for_model("inkling_text", vocab_size=128, hidden_size=32, intermediate_size=64,
                                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                  n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=16,
                                  layer_types=["hybrid", "hybrid"], pad_token_id=0, bos_token_id=1, eos_token_id=2)
    model = AutoModelForCausalLM.from_config(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]])
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False, cache_implementation='static')
