"""The probe of ``decoding-prefill-chunks-full-ids`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

import warnings


def probe() -> dict:
    import torch
    from transformers import GenerationConfig, GenerationMixin

    from hf_genfix.oracles import DefectObserved, ProbeSkipped
    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps
    from hf_genfix.oracles.sweep.continuations import loud_model, unless_upstream_fails

    if not hasattr(GenerationConfig(), "prefill_chunk_size"):
        raise ProbeSkipped("generate() has no prefill_chunk_size on this release (4.51.0 added it)")
    if not hasattr(GenerationMixin, "_prefill_chunking"):
        raise ProbeSkipped("no GenerationMixin._prefill_chunking on this release (5.0 replaced it by _prefill)")
    model = loud_model("ctrl")
    row = torch.randint(3, 128, (19,), generator=torch.Generator().manual_seed(5)).tolist()
    ids = torch.tensor([row])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            # 4.51-4.53 refuse the loop without a cache (a refusal in words: skipped).
            run = unless_upstream_fails(generate_steps, model, ids, torch.ones_like(ids), max_new_tokens=4,
                                        min_new_tokens=4, pad_token_id=0, eos_token_id=None, prefill_chunk_size=5)
        except ProbeSkipped as exc:
            # 4.57 crashes on the same cut chunk instead of going on with it: its mask prefix no longer matches the
            # one token fed (RuntimeError: The size of tensor a (10) must match the size of tensor b (6)).
            cause = exc.__cause__
            if isinstance(cause, RuntimeError) and "must match the size" in str(cause):
                raise DefectObserved(f"generate(prefill_chunk_size=5) on CTRL crashes: {cause}") from cause
            raise
    return check_rows_against_reference(model, [row], run, "generate(prefill_chunk_size=5) on a 19-token prompt",
                                        eos_token_id=[])
