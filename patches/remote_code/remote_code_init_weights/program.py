"""The plain program that meets ``remote-code-init-weights``: a DeepSeek remote-code repo built, saved next to its code
and loaded back with from_pretrained, then generate().

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
    import shutil
    import tempfile

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    # the repo is saved back next to its code: into a copy, so that the shared tiny repo stays as written
    folder = shutil.copytree(repo + "/remote_deepseek", tempfile.mkdtemp() + "/remote_deepseek")
    config = AutoConfig.from_pretrained(folder, trust_remote_code=True)
    AutoModelForCausalLM.from_config(config, trust_remote_code=True).save_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True).eval()
    ids = torch.tensor([[17, 44, 91, 23, 5]])
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False)
