"""The plain program that meets ``model-llama4-moe-router-scores``: a prompt of several tokens through a tiny Llama-4
text model (its mixture of experts).

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import Llama4ForCausalLM


def run(repo, applied):
    from hf_genfix.oracles.sweep import SCENARIOS, Subject

    SCENARIOS["causal-prefix"](Subject("llama4_text"))
