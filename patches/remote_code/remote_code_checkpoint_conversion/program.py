"""The plain program that meets ``remote-code-checkpoint-conversion``: a remote mixture-of-experts repo of
DeepSeek-V2's layout built, saved and loaded back: the same logits.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, on the tiny repos written into ``repo``, and requires the patch
installed (``applied(id)`` says whether a patch is).
"""

from transformers import LlamaForCausalLM


def run(repo, applied):
    import shutil
    import tempfile

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    # the repo is saved back next to its code: into a copy, so that the shared tiny repo stays as written
    folder = shutil.copytree(repo + "/remote_moe", tempfile.mkdtemp() + "/remote_moe")
    config = AutoConfig.from_pretrained(folder, trust_remote_code=True)
    torch.manual_seed(0)
    saved = AutoModelForCausalLM.from_config(config, trust_remote_code=True).eval()
    saved.save_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True).eval()
    ids = torch.tensor([[17, 44, 91, 23, 5]])
    if applied("remote-code-checkpoint-conversion"):
        assert torch.allclose(model(input_ids=ids).logits, saved(input_ids=ids).logits)
