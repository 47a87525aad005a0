"""The plain program that meets ``remote-code-tied-missing-keys``: a remote-code model with tied weights (MiniCPM's
shape) saved with ``save_pretrained`` and loaded back with ``from_pretrained``.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import AutoModelForCausalLM, PreTrainedModel


def run(repo, applied):
    import glob
    import shutil
    import tempfile
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    config = AutoConfig.from_pretrained(repo + "/remote_minicpm", trust_remote_code=True)
    model = AutoModelForCausalLM.from_config(config, trust_remote_code=True).eval()
    folder = tempfile.mkdtemp()
    model.save_pretrained(folder)
    for code in glob.glob(repo + "/remote_minicpm/*.py"):
        shutil.copy(code, folder)
    again = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True).eval()
    ids = torch.tensor([[17, 44, 91, 23, 5]])
    again.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False)
