"""The plain program that meets ``model-qwen2-vl-continuation-deltas``: a second turn of a padded image batch on a
tiny Qwen2-VL.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import Qwen2VLForConditionalGeneration


def run(repo, applied):
    from hf_genfix.catalog import probe

    probe("model-qwen2-vl-continuation-deltas")()
