"""The plain program that meets ``pad-token-collator``: the causal-LM collator batching two tokenized rows for
training.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import AutoTokenizer, DataCollatorForLanguageModeling


def run(repo, applied):
    from transformers import AutoTokenizer, DataCollatorForLanguageModeling
    tok = AutoTokenizer.from_pretrained(repo + "/llama3")
    rows = [tok(t)["input_ids"] + [tok.eos_token_id] for t in ("hello world, how are you", "the fox")]
    batch = DataCollatorForLanguageModeling(tokenizer=tok, mlm=False)(
        [dict(input_ids=r, attention_mask=[1] * len(r)) for r in rows])
    if applied("pad-token-collator") and applied("pad-token"):
        real = batch["attention_mask"].bool() & (batch["input_ids"] == tok.eos_token_id)
        assert (batch["labels"][real] == tok.eos_token_id).all(), batch["labels"]
