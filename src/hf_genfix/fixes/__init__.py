"""The fixes, one package per family: ``fixes/<family>/``, beside ``patches/<family>/`` (the manifests) and
``tests/<family>/`` (folder names with ``_`` for ``-``). A family is the part of ``generate()`` a user would name
when the defect bites; ``hf-genfix list``, the README's patch table and the compat matrix group by it.

A helper used by one family lives in that family's package (``remote_code/_remote_code.py``); one that several
families use is imported from where it lives by its full name (``hf_genfix.fixes.remote_code._remote_code``).
"""

# family -> what it covers, in a user's words; the order is the order of `hf-genfix list` and the docs.
FAMILIES: dict[str, str] = {
    "padding": "batches of prompts of different lengths: which side is padded, the pad token, padded prefill chunks",
    "prepare-inputs": "the decode step: what prepare_inputs_for_generation feeds the model at each step, "
                      "tuple-style caches",
    "sliding-window": "models with sliding-window attention: the caches they build, chunked prefill, images, drafts",
    "decoding": "the generation loop: drafting and assisted decoding, prompt lookup, logits processors, beam search",
    "remote-code": "models and tokenizers loaded with trust_remote_code=True, written for an older transformers",
    "models": "one model type's own defect, in its modeling code rather than in generate()",
}


def folder(family: str) -> str:
    """The folder of a family under ``patches/``, ``src/hf_genfix/fixes/`` and ``tests/``."""
    return family.replace("-", "_")
