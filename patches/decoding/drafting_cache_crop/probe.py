"""The probe of ``drafting-cache-crop`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles import DefectObserved, tiny_model
    from hf_genfix.oracles.drafting import check_assisted
    from hf_genfix.oracles.sliding import prompts

    target, drafter = tiny_model("llama"), tiny_model("llama", seed=1)
    what = "llama assisted decoding, 4-token drafts, 12 + 16 tokens"
    try:
        return check_assisted(target, drafter, prompts(12)[0], 16, 4, what)
    except RuntimeError as exc:
        if "cannot reshape tensor of 0 elements" not in str(exc):
            raise
        raise DefectObserved(f"{what}: RuntimeError: {exc}") from exc
