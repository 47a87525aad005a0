"""model-fsmt-uncached-mask: FSMT's ``generate(use_cache=False)`` runs its decoder without a causal mask (silently
wrong from the second generated token).

The defect. ``FSMTModel.forward`` makes the decoder's masks (causal, and the padding of the decoder ids) only
``if not use_cache and input_ids is not None``: with a cache the decoder is fed one token at a time and needs none.
``generate(use_cache=False)`` runs the encoder once and then calls the model with ``encoder_outputs`` and
``input_ids=None`` every step, so the whole decoder sequence it feeds is attended to without a causal mask: every
position sees the tokens after it, and the last position's logits (the step's) are another function of the
sequence than a plain forward gives. Step 0 (one decoder token) is right; from step 1 on the logits are wrong
(0.43 to 0.60 on the calibrated tiny FSMT, 1.8e-5 with transformers' init: a near-invisible defect on tame
weights). Measured: 4.46.3, 5.2.0 and 5.24.0 (the condition is the same in every release of the matrix).

Detection. A tiny FSMT (calibrated), a 9-token source, ``generate(use_cache=False)`` greedy for 6 tokens: every
step's logits against a no-cache forward of the source and the final decoder sequence (the forward that makes its
own masks).

Correction. ``FSMTModel.forward`` is wrapped: for a call without cache (``use_cache`` false once resolved as the
model does), with ``encoder_outputs`` given, ``input_ids`` not given and a decoder sequence of two tokens or more,
the call gets ``input_ids`` = the decoder ids, which upstream reads only to decide whether to make the masks (and
to run the encoder, which ``encoder_outputs`` skips): the masks are then upstream's own, those a plain forward
makes. A cached call, a call that gives ``input_ids`` or no ``encoder_outputs``, decoder embeddings instead of ids,
and a one-token decoder sequence (nothing to mask) are left to upstream.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments, hidden_from_warnings, recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

FORWARD = "transformers.models.fsmt.modeling_fsmt:FSMTModel.forward"


def install(patcher: Any) -> None:
    patcher.require(FORWARD, "input_ids", "decoder_input_ids", "encoder_outputs", "use_cache")
    patcher.wrap(FORWARD, _forward)


def _forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    bound = bound_arguments(wrapped, args, kwargs)
    decoder_ids = bound.get("decoder_input_ids")
    use_cache = bound.get("use_cache")
    if use_cache is None:
        use_cache = getattr(instance.config, "use_cache", False)
    if (use_cache or bound.get("input_ids") is not None or bound.get("encoder_outputs") is None
            or bound.get("decoder_inputs_embeds") is not None or not isinstance(decoder_ids, torch.Tensor)
            or decoder_ids.dim() != 2 or decoder_ids.shape[1] < 2):
        return wrapped(*args, **kwargs)
    if record.on:
        record.changed("FSMT without cache: the decoder's causal mask for %d tokens", decoder_ids.shape[1])
    if args:  # input_ids is the first parameter: pass it by name, the rest as given
        kwargs = dict(kwargs)
        kwargs.update(zip(_names(wrapped), args))
        args = ()
    return wrapped(*args, **dict(kwargs, input_ids=decoder_ids))


@hidden_from_warnings
def _names(wrapped: Any) -> list[str]:
    import inspect

    return [p.name for p in inspect.signature(wrapped).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
