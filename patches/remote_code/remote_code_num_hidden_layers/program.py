"""The plain program that meets ``remote-code-num-hidden-layers``: generate() on a trust_remote_code ChatGLM3 repo
written for an older transformers.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import AutoModelForCausalLM
import transformers.dynamic_module_utils
import transformers.modeling_utils, transformers.generation.utils
try:
    import transformers.modeling_attn_mask_utils
except ImportError:
    pass


def run(repo, applied):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    config = AutoConfig.from_pretrained(repo + "/remote_chatglm3", trust_remote_code=True)
    model = AutoModelForCausalLM.from_config(config, trust_remote_code=True).eval()
    ids = torch.tensor([[17, 44, 91, 23, 5]])
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False)
