"""The probe of ``decoding-prompt-lookup-length`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    import torch

    from hf_genfix.oracles import DefectObserved, tiny_model
    from hf_genfix.oracles.sliding import prompts

    model = tiny_model("llama")
    ids = torch.tensor(prompts(12, seed=1))
    # eos 120: never produced by this greedy run, so both runs go to max_new_tokens (and no eos-less look-up).
    common = dict(attention_mask=torch.ones_like(ids), max_new_tokens=40, do_sample=False, pad_token_id=0,
                  eos_token_id=120)
    with torch.no_grad():
        greedy = model.generate(ids, **common)[0, ids.shape[1]:].tolist()
        looked = model.generate(ids, prompt_lookup_num_tokens=10, **common)[0, ids.shape[1]:].tolist()
    what = "prompt lookup (10-token candidates), 12 + 40 tokens"
    if len(greedy) != 40:
        raise RuntimeError(f"plain greedy stopped after {len(greedy)} tokens: the probe's eos choice is wrong")
    if looked[:40] != greedy:
        raise DefectObserved(f"{what}: tokens differ from plain greedy")
    if len(looked) != 40:
        raise DefectObserved(f"{what}: {len(looked)} new tokens for max_new_tokens=40 (the first 40 are plain "
                             f"greedy's)", tokens=len(looked))
    return {"tokens": len(looked)}
