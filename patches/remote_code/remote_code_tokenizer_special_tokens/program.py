"""The plain program that meets ``remote-code-tokenizer-special-tokens``: a remote tokenizer that adds no special
tokens (Qwen-1's shape) encoding a padded batch.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import LlamaForCausalLM


def run(repo, applied):
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(repo + "/remote_plain_tokenizer", trust_remote_code=True)
    batch = tok(["hi there", "hello world again"], padding=True)
    assert None not in sum(batch["input_ids"], []), batch
