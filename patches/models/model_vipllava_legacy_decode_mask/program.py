"""The plain program that meets ``model-vipllava-legacy-decode-mask``: a left-padded batch of image prompts on a tiny
VipLLaVA.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import VipLlavaForConditionalGeneration


def run(repo, applied):
    from hf_genfix.catalog import probe

    probe("model-vipllava-legacy-decode-mask")()
