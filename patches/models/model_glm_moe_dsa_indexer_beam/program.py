"""The plain program that meets ``model-glm-moe-dsa-indexer-beam``: beam search on a tiny GLM-MoE-DSA whose
sequences are longer than its indexer's top-k.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import GlmMoeDsaForCausalLM


def run(repo, applied):
    from hf_genfix.oracles.sweep import SCENARIOS, Subject

    SCENARIOS["beam-loud"](Subject("glm_moe_dsa@selection"))
