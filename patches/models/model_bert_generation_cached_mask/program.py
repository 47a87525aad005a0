"""The plain program that meets ``model-bert-generation-cached-mask``: a cached generate() on a tiny BertGeneration
decoder.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import BertGenerationDecoder


def run(repo, applied):
    from hf_genfix.catalog import probe

    probe("model-bert-generation-cached-mask")()
