"""The plain program that meets ``model-qwen2-vl-cache-position``: a hand-written decoding step of a tiny Qwen2-VL after a cache.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import Qwen2VLForConditionalGeneration


def run(repo, applied):
    from hf_genfix.oracles.sweep import SCENARIOS
    from hf_genfix.oracles.sweep.families import ImageTextSubject

    SCENARIOS["image-chunk-after-cache"](ImageTextSubject("qwen2_vl"))
