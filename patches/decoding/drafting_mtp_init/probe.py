"""The probe of ``drafting-mtp-init`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.drafting import forward_calls
    from hf_genfix.oracles.sliding import check_same_as_greedy, drafting, gemma4_drafter, prompts, sliding_model

    target = sliding_model("gemma4-shared-kv", window=64)
    drafter = gemma4_drafter(target, window=64)
    what = "gemma4 MTP decoding, 3-token drafts, 12 + 8 tokens"
    try:
        with forward_calls(drafter) as calls:
            figures = check_same_as_greedy(target, prompts(12)[0], 8, what, **drafting(drafter, 3))
    except TypeError as exc:
        if "SinglePositionMultiTokenCandidateGenerator.__init__()" not in str(exc):
            raise
        raise DefectObserved(f"{what}: TypeError: {exc}") from exc
    if not calls:
        raise AssertionError(f"{what}: the assistant never drafted: nothing was checked")
    return dict(figures, drafter_forwards=len(calls))
