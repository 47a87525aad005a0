"""prepare-inputs-encoder-mask: on 4.49 the generic ``prepare_inputs_for_generation`` drops the encoder's attention
mask of every encoder-decoder model, so a padded encoder batch (translation, summarisation: the plainest batched
``generate()``) is silently wrong on its shorter rows, in greedy, beam and static-cache decoding alike.

The defect. 4.49.0 taught ``GenerationMixin.prepare_inputs_for_generation`` the decoder's own mask and positions
for encoder-decoder models: ``attention_mask = kwargs.pop("decoder_attention_mask", None) if
self.config.is_encoder_decoder else attention_mask``. That line overwrites the method's ``attention_mask``
argument, which for such a model is the encoder's mask, and nothing puts it back into the inputs: every decoding
step's cross-attention then reads the pads of the encoder output. A right-padded batch gives the short row other
logits than it gets alone from its first generated token (0.57-0.87 on the sweep's tiny BART, T5, Marian, LED,
MVP, FSMT, Pegasus; beam search picks other sequences). 4.48 passed the argument on; 4.50.0 keeps it aside
(``encoder_attention_mask = attention_mask if self.config.is_encoder_decoder else None``) and puts it back as
``model_inputs["attention_mask"]``.

Detection (``probe``): the sweep's ``s2s-padded`` equivalence on a tiny BART: a right-padded encoder batch
through ``generate()``, every row's every step against a no-cache forward of its unpadded encoder row.

Correction. The generic method is wrapped (overrides that call ``super()`` reach it too): for an
encoder-decoder model whose returned inputs lack ``attention_mask``, the ``attention_mask`` it was given goes
back in, as 4.48 and 4.50 do. A decoder-only model, inputs that hold the key, and a call without a mask are
upstream's.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments, recorder
from hf_genfix.toolkit.prepare_inputs import GENERIC

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()


def install(patcher: Any) -> None:
    patcher.require(GENERIC, "attention_mask")
    patcher.wrap(GENERIC, _keep_encoder_mask)


def _keep_encoder_mask(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    inputs = wrapped(*args, **kwargs)
    if record.on:
        record.seen()
    config = getattr(instance, "config", None)
    if not getattr(config, "is_encoder_decoder", False) or not isinstance(inputs, dict) or "attention_mask" in inputs:
        record.unchanged()
        return inputs
    mask = bound_arguments(wrapped, args, kwargs).get("attention_mask")
    if mask is None:
        record.unchanged()
        return inputs
    inputs["attention_mask"] = mask  # the encoder's, as 4.50.0 puts it back
    if record.on:
        record.changed("kept the encoder's attention_mask")
    return inputs
