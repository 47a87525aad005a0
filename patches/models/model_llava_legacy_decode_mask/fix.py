"""model-llava-legacy-decode-mask: LLaVA on 4.46.1-4.47 drops a left-padded batch's attention mask at every cached
decoding step (silently wrong from the second generated token on the padded rows).

The defect. ``LlavaForConditionalGeneration.forward`` on 4.46.1-4.47 decides "legacy processing" (the image token
expanded inside the model, for processors that did not expand it) by ``(input_ids == image_token_index).sum(1).max()
< image_seq_length``. A decoding step's ``input_ids`` is one text token, so the count is 0 and every decoding step
takes the legacy path, even for a prompt whose image tokens the processor expanded: there, for a one-token step,
the model rebuilds the attention mask from the cache (ones, except where the first layer's cached keys are exactly
zero) and the positions from that mask's sum. A left-padded row's pads have keys that are not zero, so from the
second generated token on the padded row attends to its padding at positions counted as if it had none. (LLaVA up to
4.46.0 nested the branch under ``pixel_values is not None``; 4.46.1 moved it out. LLaVA-NeXT and VipLLaVA have the
same check and the same branch: their own patches, model-llava-next-legacy-decode-mask and
model-vipllava-legacy-decode-mask.) 4.48.0 removed the legacy path. Measured on the sweep's calibrated tiny LLaVA,
4.46.3: 4.25 from step 1 (image-loud-cached-padded).

Detection. The sweep's ``image-loud-cached-padded`` scenario on a tiny LLaVA (16 image tokens, expanded in the
prompt as a processor does; loud weights): a left-padded batch of two image prompts, cached greedy generate(),
every row's every step against the no-cache forward of that row alone with its image.

Correction. The forward is wrapped to pass such a step's token as ``inputs_embeds`` (the model's own embedding), so
that it takes its current path with the mask and positions generate() gave; a step after a legacy prefill and every
other call are upstream's. Shared with LLaVA-NeXT's and VipLLaVA's patches:
``patches/models/shared/llava_legacy_decode.py``.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared import llava_legacy_decode

FORWARD = "transformers.models.llava.modeling_llava:LlavaForConditionalGeneration.forward"


def install(patcher: Any) -> None:
    llava_legacy_decode.install(patcher, FORWARD, __name__)
