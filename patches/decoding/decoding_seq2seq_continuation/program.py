"""The plain program that meets ``decoding-seq2seq-continuation``: a second generate() on a tiny MVP (BART's
architecture) that continues from the cache the first one returned.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import MvpForConditionalGeneration


def run(repo, applied):
    import torch
    from transformers import AutoConfig, AutoModelForSeq2SeqLM
    config = AutoConfig.from_pretrained(repo + "/mvp")
    model = AutoModelForSeq2SeqLM.from_config(config).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10]])
    mask = torch.ones_like(ids)
    first = model.generate(ids, attention_mask=mask, max_new_tokens=3, do_sample=False, return_dict_in_generate=True)
    more = torch.cat([first.sequences, torch.tensor([[11, 12, 13]])], dim=1)
    model.generate(ids, attention_mask=mask, decoder_input_ids=more, past_key_values=first.past_key_values,
                   max_new_tokens=3, do_sample=False)
