"""The plain program that meets ``model-gemma3n-altup-zero-rows``: a left-padded batch on a tiny Gemma-3n text model
(its pad token's embedding row zero).

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import Gemma3nForCausalLM


def run(repo, applied):
    from hf_genfix.oracles.sweep import SCENARIOS, Subject

    SCENARIOS["left-padded"](Subject("gemma3n_text"))
