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

from hf_genfix import _record
from hf_genfix.fixes.sliding_window.sliding_window_image_mask import bound_arguments

PATCH = "model-fsmt-uncached-mask"
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
    if _record.on:
        _record.changed(PATCH, "FSMT without cache: the decoder's causal mask for %d tokens", decoder_ids.shape[1])
    if args:  # input_ids is the first parameter: pass it by name, the rest as given
        kwargs = dict(kwargs)
        kwargs.update(zip(_names(wrapped), args))
        args = ()
    return wrapped(*args, **dict(kwargs, input_ids=decoder_ids))


def _names(wrapped: Any) -> list[str]:
    import inspect

    return [p.name for p in inspect.signature(wrapped).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def tiny_fsmt() -> Any:
    """A tiny FSMT (English to German, vocabularies of 128), calibrated, with a plain greedy generation config."""
    import torch
    from transformers import FSMTConfig, FSMTForConditionalGeneration, GenerationConfig

    from hf_genfix.oracles.tiny import calibrate

    config = FSMTConfig(langs=["en", "de"], src_vocab_size=128, tgt_vocab_size=128, d_model=32, encoder_layers=2,
                        decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                        encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=256, pad_token_id=0,
                        bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    torch.manual_seed(0)
    with torch.no_grad(), torch.device("cpu"):
        model = FSMTForConditionalGeneration(config)
    model = calibrate(model.float()).eval()
    model.generation_config = GenerationConfig(pad_token_id=0, bos_token_id=1, eos_token_id=None,
                                               decoder_start_token_id=1)
    return model


def probe() -> dict:
    import warnings

    import torch

    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.precision import tolerance
    from hf_genfix.oracles.reference import max_diff

    model = tiny_fsmt()
    source = torch.randint(3, 128, (1, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model.generate(source, attention_mask=torch.ones_like(source), max_new_tokens=6, do_sample=False,
                             use_cache=False, return_dict_in_generate=True, output_logits=True)
        reference = model(input_ids=source, attention_mask=torch.ones_like(source),
                          decoder_input_ids=out.sequences, use_cache=False).logits[0].float()
    worst = 0.0
    for t, logits in enumerate(out.logits):
        diff = max_diff(logits[0].float(), reference[t])
        worst = max(worst, diff)
        if not diff <= tolerance():
            raise DefectObserved(f"FSMT generate(use_cache=False): step {t}: max |logit diff| {diff:.3g} against a "
                                 "no-cache forward of the source and the decoder sequence", max_logit_diff=diff,
                                 step=t)
    return {"max_logit_diff": worst, "steps": len(out.logits)}
