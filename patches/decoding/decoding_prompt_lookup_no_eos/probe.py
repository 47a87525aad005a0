"""The probe of ``decoding-prompt-lookup-no-eos`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    import torch

    from hf_genfix.oracles import DefectObserved, tiny_model
    from hf_genfix.oracles.sliding import prompts

    model = tiny_model("llama")
    row = prompts(12)[0]
    row = row + row[:6] + row  # repeated: the look-up finds matches from the first step
    ids = torch.tensor([row])
    common = dict(attention_mask=torch.ones_like(ids), max_new_tokens=8, do_sample=False, pad_token_id=0,
                  eos_token_id=None)
    what = "prompt lookup (3-token candidates) with eos_token_id=None, 30 + 8 tokens"
    with torch.no_grad():
        greedy = model.generate(ids, **common)[0, ids.shape[1]:].tolist()
        try:
            looked = model.generate(ids, prompt_lookup_num_tokens=3, **common)[0, ids.shape[1]:].tolist()
        except TypeError as exc:
            if "isin" not in str(exc):
                raise
            raise DefectObserved(f"{what}: TypeError: {str(exc).splitlines()[0]}") from exc
    if looked[: len(greedy)] != greedy:
        raise DefectObserved(f"{what}: tokens differ from plain greedy")
    return {"tokens": len(looked)}
