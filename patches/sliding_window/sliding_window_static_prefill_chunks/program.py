"""The plain program that meets ``sliding-window-static-prefill-chunks``: generate(prefill_chunk_size=k) on a tiny
Gemma-2 (sliding window 8, its default cache) with a prompt longer than the window.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import Gemma2ForCausalLM


def run(repo, applied):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(repo + "/gemma2")).eval()
    ids = torch.tensor([list(range(3, 22))])
    try:
        model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False,
                       prefill_chunk_size=5, pad_token_id=0)
    except ValueError as exc:
        if not applied("sliding-window-static-prefill-chunks") or "hf_genfix" not in str(exc):
            raise
