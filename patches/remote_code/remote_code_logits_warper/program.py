"""The plain program that meets ``remote-code-logits-warper``: ChatGLM3's own streaming loop (stream_generate) on a
batch from its remote tokenizer.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import LlamaForCausalLM


def run(repo, applied):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    folder = repo + "/remote_chatglm3"
    tok = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    config = AutoConfig.from_pretrained(folder, trust_remote_code=True)
    model = AutoModelForCausalLM.from_config(config, trust_remote_code=True).eval()
    inputs = tok(["hi there", "hello"], padding=True, return_tensors="pt")
    *_, last = model.stream_generate(**inputs, max_new_tokens=3, do_sample=False)
