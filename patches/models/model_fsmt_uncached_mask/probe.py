"""The probe of ``model-fsmt-uncached-mask`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any


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
