"""The plain program that meets ``model-llava-next-legacy-decode-mask``: a left-padded batch of image prompts on a tiny
LLaVA-NeXT.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import LlavaNextForConditionalGeneration


def run(repo, applied):
    from hf_genfix.catalog import probe

    probe("model-llava-next-legacy-decode-mask")()
