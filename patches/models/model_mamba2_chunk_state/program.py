"""The plain program that meets ``model-mamba2-chunk-state``: a second turn continuing generate()'s returned cache
on a tiny Mamba-2.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import Mamba2ForCausalLM


def run(repo, applied):
    import inspect

    import torch
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(repo + "/mamba2")
    model = Mamba2ForCausalLM(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12]])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False,
                         return_dict_in_generate=True)
    more = torch.cat([out.sequences, torch.tensor([[20, 21, 22]])], dim=1)
    # the cache argument generate() passes on: cache_params before 5.13, past_key_values (cache from 5.24) after
    taken = inspect.signature(model.prepare_inputs_for_generation).parameters
    keyword = "past_key_values" if {"past_key_values", "cache"} & set(taken) else "cache_params"
    model.generate(more, attention_mask=torch.ones_like(more), max_new_tokens=2, do_sample=False,
                   **{keyword: out.past_key_values})
