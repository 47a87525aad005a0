"""The probe of ``decoding-prefill-chunks-inputs`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

import warnings


def probe() -> dict:
    from transformers import GenerationConfig, GenerationMixin

    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep import SCENARIOS, Subject
    from hf_genfix.oracles.sweep.families import ImageTextSubject

    if not hasattr(GenerationConfig(), "prefill_chunk_size"):
        raise ProbeSkipped("generate() has no prefill_chunk_size on this release (4.51.0 added it)")
    if not hasattr(GenerationMixin, "_prefill_chunking"):
        # 5.0 replaced the loop by GenerationMixin._prefill: decoding-image-prefill-chunks' code (5.0-5.22), and
        # 5.23+ raise a shape error on chunked inputs_embeds (loud).
        raise ProbeSkipped("no GenerationMixin._prefill_chunking on this release (5.0 replaced it by _prefill)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            image = SCENARIOS["image-prefill-chunks-padded"](ImageTextSubject("blip-2"))
        except ValueError as exc:
            # A model given no default cache: the loop's own "without a cache" refusal (loud).
            if "prefill chunking" not in str(exc).lower():
                raise
            raise ProbeSkipped(f"generate(prefill_chunk_size=) with an image raises here: {exc}") from exc
        embeds = SCENARIOS["inputs-embeds-prefill-chunks"](Subject("llama"))
    return {"max_logit_diff": max(image["max_logit_diff"], embeds["max_logit_diff"]),
            "blip_2": image["max_logit_diff"], "llama_embeds": embeds["max_logit_diff"]}
