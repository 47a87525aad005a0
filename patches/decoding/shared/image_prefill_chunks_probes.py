"""The probes of ``decoding-image-prefill-chunks-bidirectional``, ``decoding-image-prefill-chunks``: the defects, and
how they are detected, are in ``_image_prefill_chunks.py``'s docstring.
"""

from __future__ import annotations

import warnings


def _probe(model_type: str) -> dict:
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep import SCENARIOS
    from hf_genfix.oracles.sweep.families import ImageTextSubject

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return SCENARIOS["image-prefill-chunks-padded"](ImageTextSubject(model_type))
        except ValueError as exc:
            # Outside the range, upstream raises (loud, no silent defect of this patch's to observe): 4.53-4.57's
            # chunk loop hands the whole image to a chunk without all its placeholders ("image features and image
            # tokens do not match", "number of images does not match"), 5.0.0 refuses chunking without a cache.
            message = str(exc).lower()
            if "image" not in message and "prefill chunking" not in message:
                raise
            raise ProbeSkipped(f"generate(prefill_chunk_size=) with an image raises here: {exc}") from exc


def probe() -> dict:
    return _probe("llava")


def probe_bidirectional() -> dict:
    return _probe("gemma3")
