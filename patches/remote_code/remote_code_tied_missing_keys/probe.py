"""The probe of ``remote-code-tied-missing-keys`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    import shutil
    import tempfile
    import warnings
    from pathlib import Path

    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    from hf_genfix.oracles import DefectObserved, ProbeSkipped
    from hf_genfix.oracles.reference import assert_close
    from hf_genfix.oracles.saving import write_modern_remote_repo

    if int(transformers.__version__.split(".")[0]) < 5:
        raise ProbeSkipped("the {target: source} form of _tied_weights_keys is 5.x's (4.x reads a list)")
    root = Path(tempfile.mkdtemp(prefix="hf_genfix_tied_"))
    try:
        repo = write_modern_remote_repo(root / "repo", repo="modern_tied", tie_word_embeddings=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            config = AutoConfig.from_pretrained(str(repo), trust_remote_code=True)
            model = AutoModelForCausalLM.from_config(config, trust_remote_code=True).float().eval()
            model.save_pretrained(root / "saved")
            for code in repo.glob("*.py"):  # from_config's model is saved without its code on some releases
                if not (root / "saved" / code.name).exists():
                    shutil.copy(code, root / "saved")
            reloaded = AutoModelForCausalLM.from_pretrained(str(root / "saved"), trust_remote_code=True).float().eval()
        meta = [name for name, p in reloaded.named_parameters() if p.is_meta]
        if meta:
            raise DefectObserved(f"the reloaded remote model keeps {meta} on the meta device (tied weights not tied)")
        ids = torch.tensor([[5, 17, 33, 9, 61]])
        with torch.no_grad():
            want, got = model(input_ids=ids).logits, reloaded(input_ids=ids).logits
        diff = assert_close(got, want, "a remote model with tied weights, saved and reloaded, vs the saved model")
        return {"max_logit_diff": diff, "tied": reloaded.lm_head.weight is reloaded.model.embed_tokens.weight}
    finally:
        shutil.rmtree(root, ignore_errors=True)
