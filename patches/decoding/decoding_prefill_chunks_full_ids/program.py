"""The plain program that meets ``decoding-prefill-chunks-full-ids``: generate() on a tiny CTRL with
prefill_chunk_size=4.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import CTRLLMHeadModel


def run(repo, applied):
    import torch
    from transformers import CTRLConfig

    config = CTRLConfig(vocab_size=128, n_positions=64, n_embd=32, dff=64, n_layer=2, n_head=2)
    model = CTRLLMHeadModel(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]])
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False,
                   prefill_chunk_size=4, pad_token_id=0)
