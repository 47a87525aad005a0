"""The plain program that meets ``padding-side``: loads a Llama-3 and a Mistral tokenizer and pads a batch.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import AutoTokenizer


def run(repo, applied):
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(repo + "/llama3")
    if applied("pad-token"):
        tok(["hello world", "the fox"], padding=True)
        assert tok.pad_token == tok.eos_token, tok.pad_token
    side = AutoTokenizer.from_pretrained(repo + "/mistral-tok").padding_side
    if applied("padding-side"):
        assert side == "left", side
