"""model-llava-next-legacy-decode-mask: LLaVA-NeXT on 4.46.1-4.47 drops a left-padded batch's attention mask at every cached
decoding step (silently wrong from the second generated token on the padded rows).

The defect. ``LlavaNextForConditionalGeneration.forward`` has LLaVA's legacy check (model-llava-legacy-decode-mask):
a decoding step's one text token holds fewer image tokens than ``image_seq_length``, so every cached step takes the
legacy branch, which rebuilds the attention mask from the cache and drops a left-padded row's padding. Measured on the
sweep's calibrated tiny LLaVA-NeXT, 4.46.3: 4.87 from step 1 (image-loud-cached-padded). 4.48.0 removed the legacy path.

Detection. The sweep's ``image-loud-cached-padded`` scenario on its tiny LLaVA-NeXT.

Correction. LLaVA's, shared: ``patches/models/shared/llava_legacy_decode.py`` (the defect and the correction in
full).
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared import llava_legacy_decode

FORWARD = "transformers.models.llava_next.modeling_llava_next:LlavaNextForConditionalGeneration.forward"


def install(patcher: Any) -> None:
    llava_legacy_decode.install(patcher, FORWARD, __name__)
