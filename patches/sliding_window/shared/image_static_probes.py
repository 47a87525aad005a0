"""The probes of ``sliding-window-image-index-gemma3``, ``sliding-window-image-static-gemma3``,
``sliding-window-image-static-gemma4``: the defects, and how they are detected, are in ``_image_static.py``'s
docstring.
"""

from __future__ import annotations

from typing import Any


def _probe(build: Any, what: str) -> dict:
    import torch

    from hf_genfix.helpers.decode import forward_spec
    from hf_genfix.oracles import DefectObserved, assert_close
    from hf_genfix.oracles.sliding_static import image_mask_reference, image_prompt, static_cache

    model = build()
    _, inputs = image_prompt(model, [(2, 3)])
    try:
        with torch.no_grad():
            # the forward's own keyword: 5.24 deprecates past_key_values= (a FutureWarning of our making otherwise)
            out = model(**inputs, **{forward_spec(model).cache_key: static_cache(model, 1, 40)}, use_cache=True)
    except IndexError as exc:
        raise DefectObserved(f"{what}: forward raised IndexError: {exc}") from exc
    diff = assert_close(out.logits.float(), image_mask_reference(model, inputs), what)
    return {"max_logit_diff": diff}


def probe_gemma3() -> dict:
    """A Gemma-3 image prompt (24 tokens) through a 40-slot StaticCache, against the policy's masks."""
    from hf_genfix.oracles.sliding_static import tiny_gemma3_vlm

    return _probe(tiny_gemma3_vlm, "Gemma-3 image prompt through a StaticCache larger than the window")


def probe_gemma4() -> dict:
    """A Gemma-4 image prompt (24 tokens) through a 40-slot StaticCache, against the policy's masks."""
    from hf_genfix.oracles.sliding_static import tiny_gemma4_vlm

    return _probe(tiny_gemma4_vlm, "Gemma-4 image prompt through a StaticCache larger than the window")
