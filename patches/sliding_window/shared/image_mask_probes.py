"""The probes of ``sliding-window-image-mask-gemma3``, ``sliding-window-image-mask-gemma4``: the defects, and how they
are detected, are in ``_image_mask.py``'s docstring.
"""

from __future__ import annotations

from typing import Any


def _probe(build: Any, what: str) -> dict:
    from hf_genfix.oracles.sliding_static import check_image_forward, image_prompt

    model = build()
    # 2 text tokens, the 16-token image, 8 text tokens: the text after the image reads layers that saw it.
    _, inputs = image_prompt(model, [(2, 8)])
    return check_image_forward(model, inputs, what)


def probe_gemma3() -> dict:
    """No-cache forward of a Gemma-3 image prompt (16 image tokens, window 8) against the policy's masks."""
    from hf_genfix.oracles.sliding_static import tiny_gemma3_vlm

    # Weights 5x the default spread: with the default (0.02) the leak moves logits by 0.013 only (5.12), under
    # bfloat16's tolerance (docs/precision.md); with 0.1 it moves them by 0.087 in float32 and bfloat16 alike.
    return _probe(lambda: tiny_gemma3_vlm(initializer_range=0.1), "Gemma-3 image prompt, block of 16 > window 8")


def probe_gemma4() -> dict:
    """No-cache forward of a Gemma-4 image prompt (16 image tokens, window 8) against the policy's masks."""
    from hf_genfix.oracles.sliding_static import tiny_gemma4_vlm

    return _probe(tiny_gemma4_vlm, "Gemma-4 image prompt, block of 16 > window 8")
