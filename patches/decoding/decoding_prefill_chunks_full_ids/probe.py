"""The probe of ``decoding-prefill-chunks-full-ids`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

import warnings


def probe() -> dict:
    import torch
    from transformers import GenerationConfig, GenerationMixin

    from hf_genfix.oracles import ProbeSkipped
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
        # 4.51-4.53 refuse the loop without a cache, 4.57 raises a shape error: loud, skipped.
        run = unless_upstream_fails(generate_steps, model, ids, torch.ones_like(ids), max_new_tokens=4,
                                    min_new_tokens=4, pad_token_id=0, eos_token_id=None, prefill_chunk_size=5)
    return check_rows_against_reference(model, [row], run, "generate(prefill_chunk_size=5) on a 19-token prompt",
                                        eos_token_id=[])
