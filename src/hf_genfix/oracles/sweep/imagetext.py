"""Image-text models, loud, and every continuation of a cache (issue 36, sections 3 and 4).

Two things the image-text kind of ``families`` lacked:

- models: LLaVA-NeXT, LLaVA-OneVision (any-resolution tiles), mllama and Idefics 1 (cross-attention to the image
  under a per-token mask), Chameleon (VQ image tokens), Fuyu (linear patches) are built tiny here and join
  ``sweep_families.IMAGE_TEXT``; Qwen2-VL / Qwen2.5-VL get a second image size, so a padded batch holds images of
  4 and 8 soft tokens;
- continuations, each checked against the no-cache forward of the whole row with its image
  (``ImageTextSubject.reference``): a second turn that continues from ``out.past_key_values`` (the image in the
  first turn; the inputs of the whole conversation given again, as a processor gives them), prefix-cache reuse
  (``copy.deepcopy`` of a prompt cache, as transformers' docs show), a chunk of several tokens after a cache that
  holds the image, ``prefill_chunk_size`` with the image in the prompt, and a plain cached / uncached padded batch.

Loud weights: the tiny models' default init (std 0.02) moves the logits so little that a real defect (a wrong
position, a dropped image) shows as 1e-3, within reach of rounding. These scenarios run with every matrix of the
model redrawn at std ``LOUD_STD`` (``loud``, restored afterwards; deterministic, so the differential's two runs see
the same weights): logits of a few units, where a wrong path moves them by 0.1 or more and fp32 rounding stays
under 1e-5 (measured: ``docs/``).
"""

from __future__ import annotations

import contextlib
import copy
import inspect
from typing import Any, Iterator

from ..generation import check_rows_against_reference, generate_cache_keyword, left_pad
from ..outcome import ProbeSkipped, earlier_stage
from . import core as sweep
from .families import (
    _CLIP,
    _SIGLIP,
    _SPECIAL,
    IMAGE,
    IMAGE_TEXT,
    IMAGE_TEXT_KIND,
    ImageText,
    _mask,
    _text,
)

LOUD_STD = 0.3


@contextlib.contextmanager
def loud(model: Any, std: float = LOUD_STD) -> Iterator[Any]:
    """Every parameter of two or more dimensions drawn from N(0, std) (a fixed seed), gates (``alpha``) at 1;
    the model's own weights come back afterwards."""
    import torch

    saved = {k: v.detach().clone() for k, v in model.state_dict().items()}
    gen = torch.Generator().manual_seed(36)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "alpha" in name.rsplit(".", 1)[-1]:
                param.fill_(1.0)  # Idefics' gated cross-attention starts closed (0): the image would not count
            elif param.dim() >= 2:
                param.copy_(torch.randn(param.shape, generator=gen, device="cpu").to(param) * std)
    try:
        yield model
    finally:
        model.load_state_dict(saved)


# -- the models ---------------------------------------------------------------------------------------------------
def _tiles(gen: Any) -> dict:
    """LLaVA-NeXT / OneVision: the base image and one 16x16 tile (grid pinpoints [[16, 16]])."""
    import torch

    return {"pixel_values": torch.rand(1, 2, 3, 16, 16, generator=gen, device="cpu"),
            "image_sizes": torch.tensor([[16, 16]])}


def _mllama_pixels(gen: Any) -> dict:
    """mllama: one image of one 16x16 tile (aspect ratio id 1: 1x1)."""
    import torch

    return {"pixel_values": torch.rand(1, 1, 1, 3, 16, 16, generator=gen, device="cpu"),
            "aspect_ratio_ids": torch.tensor([[1]]), "aspect_ratio_mask": torch.ones(1, 1, 1, dtype=torch.long)}


def _idefics_pixels(gen: Any) -> dict:
    import torch

    return {"pixel_values": torch.rand(1, 1, 3, 16, 16, generator=gen, device="cpu")}


def _fuyu_pixels(gen: Any) -> dict:
    """Fuyu: the image as 16 flattened 4x4x3 patches (the processor's ``image_patches``; ``pixel_values`` from
    5.23, which renamed it). The name is read from the model's forward: keyed on the major version until session
    27, 5.0-5.22 were handed ``pixel_values``, which generate() refuses there, and every Fuyu image scenario was an
    "upstream error" on those releases."""
    import inspect

    import torch
    from transformers import FuyuForCausalLM

    key = "image_patches" if "image_patches" in inspect.signature(FuyuForCausalLM.forward).parameters \
        else "pixel_values"
    return {key: torch.rand(1, 16, 48, generator=gen, device="cpu")}


def _qwen_two_sizes(gen: Any) -> dict:
    """Qwen2-VL: images of 4x4 or 4x8 patches (4 or 8 soft tokens), drawn from the seed."""
    import torch

    wide = bool(torch.randint(0, 2, (1,), generator=gen))
    t, h, w = (1, 4, 8) if wide else (1, 4, 4)
    return {"pixel_values": torch.rand(t * h * w, 3 * 2 * 2 * 2, generator=gen, device="cpu"),
            "image_grid_thw": torch.tensor([[t, h, w]])}


def _chameleon() -> dict:
    # 16 VQ codes at ids 100..115 (names IMGIMG<digits as letters>Z, as Chameleon's vocabulary spells them); a
    # 16x16 image downsampled twice gives 4x4 codes. GroupNorm takes 32 groups: 32 channels.
    letters = "ABCDEFGHIJ"
    vocab = {"<image>": IMAGE, **{"IMGIMG" + "".join(letters[int(d)] for d in str(code)) + "Z": 100 + code
                                  for code in range(16)}}
    vq = dict(embed_dim=8, num_embeddings=16, latent_channels=8, resolution=16, in_channels=3, base_channels=32,
              channel_multiplier=[1, 1, 1], num_res_blocks=1, attn_resolutions=[])
    text = {k: v for k, v in _text("chameleon").items() if k != "model_type"}
    return dict(text, vq_config=vq, vocabulary_map=vocab, image_token_id=IMAGE)


def _default_rope() -> dict:
    """4.x mllama reads ``rope_scaling["rope_type"]`` without a default (5.0 renamed it ``rope_parameters``)."""
    import transformers

    if int(transformers.__version__.split(".")[0]) >= 5:
        return {}
    return {"rope_scaling": {"rope_type": "default"}}


NEW_TYPES: dict[str, ImageText] = {
    "llava_next": ImageText(lambda: dict(text_config=_text("llama"), vision_config=_CLIP, image_token_index=IMAGE,
                                         image_token_id=IMAGE, vision_feature_layer=-1,
                                         vision_feature_select_strategy="default",
                                         image_grid_pinpoints=[[16, 16]], image_seq_length=36),
                            image_tokens=36, pixels=_tiles),
    "llava_onevision": ImageText(lambda: dict(text_config=_text("qwen2"), vision_config=_SIGLIP,
                                              image_token_index=IMAGE, image_token_id=IMAGE, vision_feature_layer=-1,
                                              vision_feature_select_strategy="full", image_grid_pinpoints=[[16, 16]]),
                                 image_tokens=36, pixels=_tiles),
    "mllama": ImageText(lambda: dict(text_config=dict(_text("mllama_text_model"), cross_attention_layers=[1],
                                                      **_default_rope()),
                                     vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                                        num_global_layers=1, attention_heads=2, image_size=16,
                                                        patch_size=4, max_num_tiles=1, vision_output_dim=32,
                                                        intermediate_layers_indices=[0],
                                                        supported_aspect_ratios=[[1, 1]]),
                                     image_token_index=IMAGE),
                        image_tokens=1, pixels=_mllama_pixels, token_types="cross"),
    "idefics": ImageText(lambda: dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, max_position_embeddings=256, pad_token_id=0,
                                      bos_token_id=1, eos_token_id=2, cross_layer_interval=1, use_resampler=False,
                                      alpha_initializer="ones",
                                      vision_config=dict(embed_dim=16, image_size=16, patch_size=4,
                                                         intermediate_size=32, num_hidden_layers=1,
                                                         num_attention_heads=2)),
                         image_tokens=1, pixels=_idefics_pixels, token_types="idefics"),
    "chameleon": ImageText(_chameleon),
    "fuyu": ImageText(lambda: dict(text_config=dict(_text("persimmon"), num_key_value_heads=None, head_dim=None),
                                   image_size=16, patch_size=4, num_channels=3, image_token_id=IMAGE,
                                   vocab_size=128, hidden_size=32, pad_token_id=0, bos_token_id=1, eos_token_id=2),
                      layout="prefix", pixels=_fuyu_pixels),
}
IMAGE_TEXT.update(NEW_TYPES)
_TWO_SIZES = ("qwen2_vl", "qwen2_5_vl")  # models whose images may differ in size within a batch, here 4x4 and 4x8


# -- the continuations ----------------------------------------------------------------------------------------------
def _image(s: Any, seed: int) -> dict:
    """Row ``seed``'s image; on Qwen2-VL / Qwen2.5-VL an odd seed draws a 4x8-patch image (8 soft tokens) and an even
    one a 4x4 (4), so a batch of consecutive seeds holds two sizes."""
    if s.model_type not in _TWO_SIZES or seed % 2 == 0:
        return s.image(seed)
    import torch

    from ..precision import current

    gen = torch.Generator().manual_seed(1000 + seed)
    t, h, w = 1, 4, 8
    return {"pixel_values": torch.rand(t * h * w, 24, generator=gen, device="cpu").to(s.model.device,
                                                                                       current().torch_dtype),
            "image_grid_thw": torch.tensor([[t, h, w]], device=s.model.device)}


def _rows(s: Any, lengths: tuple[int, ...], seed: int) -> tuple[list[list[int]], list[dict]]:
    """Prompts of ``lengths`` text tokens, each with its own image (seeds ``seed``, ``seed + 1``, ...)."""
    images = [_image(s, seed + i) for i in range(len(lengths))]
    tokens = [int(im["image_grid_thw"].prod()) // 4 if "image_grid_thw" in im else s.spec.image_tokens
              for im in images]
    return s.prompts(*lengths, seed=seed, tokens=tokens), images


def _inputs(s: Any, prompts: list[list[int]], images: list[dict], extra: list[list[int]] | None = None,
            pixels: bool = True) -> dict:
    """Left-padded inputs of ``prompts`` (each followed by its ``extra`` tokens), images (unless not ``pixels``:
    a continuation whose image is in the cache already) and token types."""
    rows = [p + (extra[b] if extra else []) for b, p in enumerate(prompts)]
    kwargs = s.batch(rows, images)
    return kwargs if pixels else {k: v for k, v in kwargs.items() if k not in images[0]}


def _generate(s: Any, kwargs: dict, **options: Any) -> Any:
    """Greedy generate() of ``kwargs`` (left-padded inputs), every step's logits with the placeholders masked."""
    import torch

    from .families import _fresh

    _fresh(s.model)
    options = dict(do_sample=False, return_dict_in_generate=True, output_logits=True, suppress_tokens=_SPECIAL,
                   pad_token_id=0, **options)
    if "past_key_values" in options:
        options[generate_cache_keyword(s.model)] = options.pop("past_key_values")
    with torch.no_grad():
        return s.model.generate(**kwargs, **options)


def _returned_cache(out: Any) -> Any:
    cache = getattr(out, "cache", None)
    return cache if cache is not None else getattr(out, "past_key_values", None)


def _check(s: Any, prompts: list[list[int]], images: list[dict], out: Any, width: int, what: str,
           reference: Any = None) -> dict:
    """Every row's every step of ``out`` against ``reference(row, tokens)`` (default: the no-cache forward of the row
    with its image, ``s.reference``)."""
    from ..generation import GenRun

    run = GenRun(out.sequences, [_mask(logits.float()) for logits in out.logits], width)
    return check_rows_against_reference(
        s.model, prompts, run, what, eos_token_id=[],
        reference=reference or (lambda b, tokens: s.reference(prompts[b], images[b], tokens[len(prompts[b]):])))


def _lengths(padded: bool, one: int, *more: int) -> tuple[int, ...]:
    return (one, *more) if padded else (one,)


def cached(s: Any, padded: bool, **options: Any) -> dict:
    prompts, images = _rows(s, _lengths(padded, 6, 3), seed=30)
    kwargs = _inputs(s, prompts, images)
    out = _generate(s, kwargs, max_new_tokens=5, **options)
    return _check(s, prompts, images, out, kwargs["input_ids"].shape[1], f"image-text, generate({options or ''})")


def second_turn(s: Any, padded: bool, pixels: bool = True) -> dict:
    """Turn 1 generates 3 tokens; turn 2 gives the whole conversation (turn 1's sequences, 4 new text tokens, the
    images again as a processor would, or not: ``pixels``) with ``past_key_values=out.past_key_values``. Between
    the turns the first turn is checked, by no-cache forwards of each row alone: other calls of the same model, as
    a server makes between two turns of one conversation (state kept on the model shows)."""
    import torch

    prompts, images = _rows(s, _lengths(padded, 6, 3), seed=40)
    kwargs = _inputs(s, prompts, images)
    width = kwargs["input_ids"].shape[1]
    first = _generate(s, kwargs, max_new_tokens=3)
    with earlier_stage():
        _check(s, prompts, images, first, width, "second turn: the first turn")
    said = [first.sequences[b, width:].tolist() + [7, 8, 9, 10] for b in range(len(prompts))]
    kwargs2 = _inputs(s, prompts, images, said, pixels)
    cache = _returned_cache(first)
    if cache is None:
        raise ProbeSkipped("generate() returned no cache")
    second = _generate(s, kwargs2, max_new_tokens=4, past_key_values=cache)
    so_far = [p + said[b] for b, p in enumerate(prompts)]
    del torch
    return _check(s, so_far, images, second, kwargs2["input_ids"].shape[1],
                  "second turn from out.past_key_values (the image in the first turn) vs the whole conversation")


def prefix_reuse(s: Any, padded: bool, pixels: bool = True) -> dict:
    """A prompt cache from one forward over the prompt (image included), then two continuations, each from a
    ``copy.deepcopy`` of it (transformers' docs' prefix caching)."""
    import torch

    from ...helpers.decode import cache_from_outputs

    prompts, images = _rows(s, _lengths(padded, 6, 3), seed=50)
    kwargs = _inputs(s, prompts, images)
    with torch.no_grad():
        prompt_cache = cache_from_outputs(s.model(**kwargs, **_positions(s, kwargs), use_cache=True))
    if prompt_cache is None:
        raise ProbeSkipped("the forward returned no cache")
    worst = 0.0
    for k, suffix in enumerate(([11, 12, 13], [21, 22, 23, 24, 25])):
        said = [list(suffix) for _ in prompts]
        kwargs2 = _inputs(s, prompts, images, said, pixels)
        out = _generate(s, kwargs2, max_new_tokens=4, past_key_values=copy.deepcopy(prompt_cache))
        figures = _check(s, [p + said[b] for b, p in enumerate(prompts)], images, out, kwargs2["input_ids"].shape[1],
                         f"prefix-cache reuse, continuation {k} from copy.deepcopy(prompt_cache)")
        worst = max(worst, figures["max_logit_diff"])
    return {"max_logit_diff": worst}


def chunk_after_cache(s: Any, padded: bool) -> dict:
    """One forward over the prompt (image included) with a cache, then one forward of 5 more tokens after it:
    every new token's logits as in the no-cache forward of the whole row."""
    import torch

    from ...helpers.decode import cache_from_outputs
    from ..reference import assert_close

    prompts, images = _rows(s, _lengths(padded, 6, 3), seed=60)
    kwargs = _inputs(s, prompts, images)
    chunk = [31, 32, 33, 34, 35]
    whole = _inputs(s, prompts, images, [chunk for _ in prompts])
    n = len(chunk)
    with torch.no_grad():
        cache = cache_from_outputs(s.model(**kwargs, **_positions(s, kwargs), use_cache=True))
        if cache is None:
            raise ProbeSkipped("the forward returned no cache")
        # The chunk: its ids and the per-token inputs of its columns (token types, cross-attention masks), the
        # whole mask, no pixels (the image is in the cache).
        rest = {k: (v[:, -n:] if k != "attention_mask" else v) for k, v in whole.items()
                if k in ("input_ids", "attention_mask") or (hasattr(v, "shape") and v.dim() >= 2
                                                           and v.shape[:2] == whole["input_ids"].shape)}
        key = "cache" if _renamed(s.model) else "past_key_values"
        logits = s.model(**rest, **_positions(s, whole, n), **{key: cache}, use_cache=True).logits.float()
    worst = 0.0
    for b, prompt in enumerate(prompts):
        ref = s.reference(prompt + chunk, images[b], [])
        worst = max(worst, assert_close(_mask(logits[b]), ref[-n:], f"a {n}-token chunk after a cache holding the "
                                        f"image, row {b}", row=b))
    return {"max_logit_diff": worst}


def _positions(s: Any, kwargs: dict, last: int | None = None) -> dict:
    """The position ids of a left-padded batch called by hand (generate() derives them from the mask; a forward
    counts from 0 at the first column, padding included): the last ``last`` columns' where given. None needed for
    one row, and none given to Qwen-VL, whose forward derives its M-RoPE positions from the ids and the mask
    (``get_rope_index``). Gemma-4 takes token types too ("mm") but counts positions from the first column like
    any other forward: it gets them (without them its prompt cache holds column positions that generate()'s
    continuation does not continue: a wrong call, not a defect -- it was on file as one, 5.24.0, session 10)."""
    from ...helpers.decode import positions_from_mask

    mask = kwargs["attention_mask"]
    derives = hasattr(getattr(s.model, "model", s.model), "get_rope_index")
    if bool(mask.all()) or derives or \
            "position_ids" not in inspect.signature(s.model.forward).parameters:
        return {}
    return {"position_ids": positions_from_mask(mask, last or mask.shape[1])}


def _renamed(model: Any) -> bool:
    from ...helpers.decode import renames_keyword

    return renames_keyword(type(model).forward, "past_key_values")


def prefill_chunks(s: Any, padded: bool) -> dict:
    from transformers import GenerationConfig

    if not hasattr(GenerationConfig(), "prefill_chunk_size"):
        raise ProbeSkipped("generate() has no prefill_chunk_size on this release")
    return cached(s, padded, prefill_chunk_size=3)


EQUIVALENCES = {
    "cached": cached,
    "uncached": lambda s, padded: cached(s, padded, use_cache=False),
    "second-turn": second_turn,
    "second-turn-text": lambda s, padded: second_turn(s, padded, pixels=False),
    "prefix-reuse": prefix_reuse,
    "prefix-reuse-text": lambda s, padded: prefix_reuse(s, padded, pixels=False),
    "chunk-after-cache": chunk_after_cache,
    "prefill-chunks": prefill_chunks,
}


# -- the scenarios --------------------------------------------------------------------------------------------------
# name -> (equivalence, padded batch): the padded batch holds two rows of different lengths and images (of two
# sizes on Qwen-VL); prefix reuse and the chunk also run on one row, as transformers' docs show them.
SCENARIOS = {
    "image-loud-cached-padded": ("cached", True),
    "image-second-turn-padded": ("second-turn", True),
    "image-second-turn-text-padded": ("second-turn-text", True),
    "image-prefix-reuse": ("prefix-reuse", False),
    "image-prefix-reuse-text-padded": ("prefix-reuse-text", True),
    "image-chunk-after-cache": ("chunk-after-cache", False),
    "image-prefill-chunks-padded": ("prefill-chunks", True),
}
_CONTINUES = ("second-turn", "second-turn-text", "prefix-reuse", "prefix-reuse-text", "chunk-after-cache")


def _declines(equivalence: str) -> Any:
    def declines(s: Any) -> str:
        if equivalence in _CONTINUES and s.spec.token_types == "prefix":
            # PaliGemma's prefix-LM: which tokens of a continued conversation belong to the bidirectional prefix
            # is not defined by the call (the reference would make all of them prefix): no oracle.
            return "a prefix-LM (the prefix of a continued conversation is not defined by the call)"
        if equivalence.endswith("-text"):
            first = next(iter(inspect.signature(s.model.generate).parameters), "")
            if first == "pixel_values":  # BLIP-2, InstructBLIP, Kosmos-2: generate() requires the pixels
                return "its generate() requires pixel_values on every call"
        return ""

    return declines


def _register(name: str, equivalence: str, padded: bool) -> None:
    func = EQUIVALENCES[equivalence]

    def run(s: Any) -> dict:
        with loud(s.model):
            return func(s, padded)

    run.__name__ = name.replace("-", "_")
    run.__doc__ = f"{equivalence} ({'a left-padded batch of two rows' if padded else 'one row'}), loud weights"
    run.declines = _declines(equivalence)  # type: ignore[attr-defined]
    needs = ("padding",) if padded else ()
    sweep.scenario(name, needs=needs, kind=IMAGE_TEXT_KIND,
                   record_forward=equivalence in ("prefix-reuse", "prefix-reuse-text", "chunk-after-cache"))(run)


for _name, (_equivalence, _padded) in SCENARIOS.items():
    _register(_name, _equivalence, _padded)
