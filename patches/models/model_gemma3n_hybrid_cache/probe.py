"""The probe of ``model-gemma3n-hybrid-cache`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    """generate(cache_implementation="hybrid") on the loud tiny Gemma-3n, a prompt past its window, against the
    model's forward of the final sequence with a full cache."""
    import torch

    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.sweep.continuations import loud_model

    model = loud_model("gemma3n_text", sliding_window=8)
    ids = torch.randint(3, 128, (1, 13), generator=torch.Generator().manual_seed(17))
    common = dict(max_new_tokens=4, do_sample=False, pad_token_id=0, eos_token_id=None,
                  attention_mask=torch.ones_like(ids), return_dict_in_generate=True, output_logits=True)
    try:
        with torch.no_grad():
            out = model.generate(ids, cache_implementation="hybrid", **common)
    except AttributeError as exc:  # 4.54: HybridCache lacks the sliding_window the sharing layers read
        raise DefectObserved(f'generate(cache_implementation="hybrid") on Gemma-3n raises: {exc}') from exc
    with torch.no_grad():
        reference = model(out.sequences, use_cache=True).logits[0, ids.shape[1] - 1:-1]
    diff = max((step[0] - reference[i]).abs().max().item() for i, step in enumerate(out.logits))
    if diff > 1e-4:
        raise DefectObserved(f'generate(cache_implementation="hybrid"), a 13-token prompt past a window of 8: max '
                             f'|logit diff| {diff:.3g} vs a forward of the final sequence with a full cache',
                             max_logit_diff=diff)
    return {"max_logit_diff": diff}
