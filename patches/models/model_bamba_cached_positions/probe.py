"""The probe of ``model-bamba-cached-positions`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    import torch

    from hf_genfix.oracles import DefectObserved, ProbeSkipped
    from hf_genfix.oracles.decode import CHUNK_PREFIX, CHUNK_TOKENS, prepare_cache_keyword
    from hf_genfix.oracles.precision import tolerance
    from hf_genfix.oracles.reference import max_diff
    from hf_genfix.oracles.sweep.core import Subject

    model = Subject("bamba").model  # the sweep's tiny Bamba, loud weights (ProbeSkipped where it cannot be built)
    keyword = prepare_cache_keyword()  # `cache` from 5.24, `past_key_values` before
    ids = torch.tensor([CHUNK_TOKENS])
    prefix, n = CHUNK_PREFIX, ids.shape[1]
    worst: dict[str, float] = {}

    def cached() -> object:
        out = model(ids[:, :prefix], use_cache=True)
        cache = out.past_key_values if hasattr(out, "past_key_values") else out.cache
        if cache is None:
            # 4.48-5.3: a plain forward returns no cache (the caller builds a HybridMambaAttentionDynamicCache):
            # there is nothing for a continuation to number its tokens after.
            raise ProbeSkipped("this release's Bamba returns no cache from a plain forward")
        return cache

    with torch.no_grad():
        reference = model(ids, use_cache=False).logits[:, prefix:]
        chunk = model(ids[:, prefix:], **{keyword: cached()}, use_cache=True).logits
        worst["a 10-token chunk after 3 cached tokens"] = max_diff(chunk, reference)
        cache, steps = cached(), []
        for t in range(prefix, prefix + 4):  # a hand-written decoding loop: one token at a time
            out = model(ids[:, t:t + 1], **{keyword: cache}, use_cache=True)
            steps.append(max_diff(out.logits[:, -1], reference[:, t - prefix]))
        worst["four 1-token steps after 3 cached tokens"] = max(steps)
    what, diff = max(worst.items(), key=lambda kv: kv[1])
    if not diff <= tolerance():
        raise DefectObserved(f"bamba: {what}, no position_ids given: max |logit diff| {diff:.3g} vs a no-cache "
                             f"forward (atol {tolerance()})", max_logit_diff=diff)
    return {"max_logit_diff": max(worst.values()), "steps_compared": 14}
