"""Oracles for the sliding-window defects of cache construction and image masks (issue 5, defects 4, 5, 7, 8, 9).

Beside the generation oracle (``oracles.generation``: every generated step against one no-cache forward of the
final sequence), these defects need three more things:

- ``forward_in_chunks``: feed a row through a cache in chunks of several tokens (chunked prefill, a continued
  cache) and compare every position's logits with the no-cache forward;
- tiny multimodal Gemma-3 / Gemma-4 models (a one-layer vision tower) and a prompt whose image block is longer
  than the window;
- ``image_mask_reference``: the logits the model must give for such a prompt, computed by handing the model
  explicit per-layer-kind 4-D masks built by ``SlidingWindowPolicy.dense_mask`` -- the mask written out from its
  definition rather than through transformers' mask builders, which are what the defects are in.

Everything imports torch / transformers inside the functions.
"""

from __future__ import annotations

from typing import Any, Sequence

from .outcome import ProbeSkipped
from .precision import cast, current, tolerance
from .reference import assert_close, reference_logits
from .sliding import WINDOW, held_tokens
IMAGE_TOKENS = 16  # twice the window: a block that does not fit in it
# Token ids of the tiny multimodal vocabularies (128 tokens; 0 pad, 1 bos, 2 eos).
BOI, EOI, IMAGE = 120, 121, 122


# -- caches and chunked forwards ----------------------------------------------------------------------------------
def static_cache(model: Any, batch_size: int, max_cache_len: int) -> Any:
    """The release's ``StaticCache`` for ``model`` (its constructor's keywords changed over the releases)."""
    from transformers import StaticCache

    # The text config: before 4.56 StaticCache reads hidden sizes from the config it is given.
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    try:
        return StaticCache(config=config, max_cache_len=max_cache_len, max_batch_size=batch_size,
                           device=model.device, dtype=model.dtype)
    except TypeError:
        return StaticCache(config=config, max_cache_len=max_cache_len)


def forward_in_chunks(model: Any, ids: Sequence[int], chunks: Sequence[int], cache: Any) -> tuple[Any, Any]:
    """Run one unpadded row through ``cache`` in chunks of the given sizes (the rest of the row, if any, one
    token at a time); returns (logits of every position ``(len(ids), vocab)``, the cache)."""
    import torch

    from ..helpers.decode import forward_spec

    row = torch.as_tensor(list(ids), dtype=torch.long, device=model.device).reshape(1, -1)
    sizes = list(chunks) + [1] * (row.shape[1] - sum(chunks))
    pieces, pos = [], 0
    with torch.no_grad():
        for size in sizes:
            end = pos + size
            positions = torch.arange(pos, end, device=row.device)
            out = model(
                input_ids=row[:, pos:end],
                attention_mask=torch.ones((1, end), dtype=torch.long, device=row.device),
                position_ids=positions[None],
                cache_position=positions,
                use_cache=True,
                **{forward_spec(model).cache_key: cache},  # 5.24 deprecates forward(past_key_values=)
            )
            cache = out.past_key_values
            pieces.append(out.logits[0].float())
            pos = end
    return torch.cat(pieces), cache


def check_chunks(model: Any, ids: Sequence[int], chunks: Sequence[int], cache: Any, what: str) -> dict:
    """``forward_in_chunks`` against one no-cache forward of ``ids`` (``DefectObserved`` on a mismatch)."""
    logits, _ = forward_in_chunks(model, ids, chunks, cache)
    diff = assert_close(logits, reference_logits(model, ids), f"{what} (chunks {list(chunks)})")
    return {"max_logit_diff": diff, "positions": len(ids)}


def kv_held(cache: Any, config: Any) -> list[tuple[str, int, int]]:
    """(layer kind, tokens held, bytes of keys + values) for each layer of ``cache``, the kind from the model's
    own layout (``SlidingWindowPolicy.cached_layer_types``), the tokens from ``oracles.sliding.held_tokens``."""
    from ..helpers.sliding_window import SlidingWindowPolicy

    kinds = SlidingWindowPolicy.cached_layer_types(config)
    held = []
    for i, tokens in enumerate(held_tokens(cache)):
        layer = cache.layers[i] if hasattr(cache, "layers") else None
        size = sum(t.numel() * t.element_size() for t in (getattr(layer, "keys", None), getattr(layer, "values", None))
                   if tokens and hasattr(t, "numel"))
        held.append((kinds[i] if i < len(kinds) else "?", tokens, size))
    return held


# -- tiny multimodal Gemma models ---------------------------------------------------------------------------------
def _text(model_type: str, **overrides: Any) -> dict:
    text = dict(
        model_type=model_type, vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, sliding_window=WINDOW,
        max_position_embeddings=256, layer_types=["sliding_attention", "full_attention"],
        pad_token_id=0, bos_token_id=1, eos_token_id=2,
    )
    text.update(overrides)
    return text


def _build(config: Any, model_class: Any, attn: str, seed: int) -> Any:
    import torch

    config._attn_implementation = attn
    for sub in ("text_config", "vision_config"):
        if getattr(config, sub, None) is not None:
            getattr(config, sub)._attn_implementation = attn
    torch.manual_seed(seed)
    with torch.no_grad(), torch.device("cpu"):  # CUDA's generator would draw other weights for the seed
        model = model_class(config)
        # Gemma-3 initialises its vision projection to zeros: every soft token would be the same vector and an
        # image block's keys interchangeable, which hides exactly the masks under test.
        for name, param in model.named_parameters():
            if name.endswith("mm_input_projection_weight"):
                param.normal_(std=0.5)
    return cast(model.float())


def tiny_gemma3_vlm(attn: str = "eager", seed: int = 0, **text_overrides: Any) -> Any:
    """Gemma-3 with a one-layer SigLIP tower: a 16x16 image gives ``IMAGE_TOKENS`` soft tokens."""
    try:
        from transformers import Gemma3Config, Gemma3ForConditionalGeneration
    except ImportError as exc:
        raise ProbeSkipped("Gemma-3 is not in this transformers release") from exc
    import transformers
    from packaging.version import Version

    if Version(Version(transformers.__version__).base_version) < Version("4.53.0"):
        # 4.50-4.52 build the image mask another way, and this tiny VLM's image forward fails there (mask size
        # 40 vs 24, or a dict where a tensor is expected): measured on 4.50.3, 4.51.0, 4.52.4.
        raise ProbeSkipped("Gemma-3 image prompts: the tiny VLM cannot run before 4.53 (another mask path)")
    vision = dict(model_type="siglip_vision_model", hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                  num_attention_heads=2, image_size=16, patch_size=4, num_channels=3)
    config = Gemma3Config(
        text_config=_text("gemma3_text", query_pre_attn_scalar=8, **text_overrides), vision_config=vision,
        mm_tokens_per_image=IMAGE_TOKENS, boi_token_index=BOI, eoi_token_index=EOI, image_token_index=IMAGE,
    )
    return _build(config, Gemma3ForConditionalGeneration, attn, seed)


def tiny_gemma4_vlm(attn: str = "eager", seed: int = 0, **text_overrides: Any) -> Any:
    """Gemma-4 (the larger models' layout: bidirectional vision attention, no KV-shared layers) with a one-layer
    vision tower: 64 patches of 2x2 pixels pooled 2x2 give ``IMAGE_TOKENS`` soft tokens."""
    try:
        from transformers import Gemma4Config, Gemma4ForConditionalGeneration
    except ImportError as exc:
        raise ProbeSkipped("Gemma-4 is not in this transformers release") from exc
    text = _text("gemma4_text", global_head_dim=8, hidden_size_per_layer_input=8, vocab_size_per_layer_input=128,
                 use_bidirectional_attention="vision", num_kv_shared_layers=0)
    text.update(text_overrides)
    vision = dict(model_type="gemma4_vision", hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                  num_attention_heads=2, num_key_value_heads=2, head_dim=8, patch_size=2, pooling_kernel_size=2,
                  position_embedding_size=16)
    config = Gemma4Config(
        text_config=text, vision_config=vision, audio_config=None, boi_token_id=BOI, eoi_token_id=EOI,
        image_token_id=IMAGE, video_token_id=123, boa_token_id=124, eoa_token_index=125, audio_token_id=126,
    )
    return _build(config, Gemma4ForConditionalGeneration, attn, seed)


def is_gemma4(model: Any) -> bool:
    return getattr(model.config, "model_type", "") == "gemma4"


def image_prompt(model: Any, rows: Sequence[tuple[int, int]], seed: int = 0) -> tuple[list[list[int]], dict]:
    """Left-padded rows ``bos, <before> text tokens, boi, IMAGE_TOKENS image tokens, eoi, <after> text tokens``
    for each ``(before, after)`` in ``rows``, one image per row; returns (unpadded token rows, model kwargs with
    input_ids, attention_mask, pixel values and the token-type ids the model family takes)."""
    import torch

    from .generation import left_pad

    g = torch.Generator().manual_seed(seed)
    token_rows = []
    for before, after in rows:
        text = torch.randint(3, 100, (before + after,), generator=g, device="cpu").tolist()
        token_rows.append([1] + text[:before] + [BOI] + [IMAGE] * IMAGE_TOKENS + [EOI] + text[before:])
    ids, mask = left_pad(token_rows)
    kwargs: dict[str, Any] = dict(input_ids=ids, attention_mask=mask)
    # Pixels are drawn on the CPU (the seed gives the same image everywhere), then moved to the model's place.
    place = dict(device=ids.device, dtype=current().torch_dtype)
    if is_gemma4(model):
        kwargs["pixel_values"] = torch.rand(len(rows), 64, 12, generator=g, device="cpu").to(**place)
        grid = torch.stack(torch.meshgrid(torch.arange(8), torch.arange(8), indexing="xy"), -1).reshape(1, 64, 2)
        grid = grid.to(ids.device)
        kwargs["image_position_ids"] = grid.expand(len(rows), -1, -1).clone()
        kwargs["mm_token_type_ids"] = (ids == IMAGE).long()
    else:
        kwargs["pixel_values"] = torch.rand(len(rows), 3, 16, 16, generator=g, device="cpu").to(**place)
        kwargs["token_type_ids"] = (ids == IMAGE).long()
    return token_rows, kwargs


def image_blocks(input_ids: Any) -> Any:
    """Block ids ``(batch, seq)``: the k-th run of image tokens of a row is block k, other tokens -1."""
    from ..helpers.sliding_window import SlidingWindowPolicy

    return SlidingWindowPolicy.block_ids(input_ids == IMAGE)


def image_masks(model: Any, input_ids: Any, attention_mask: Any) -> dict:
    """Per-layer-kind additive 4-D masks of a no-cache forward over ``input_ids``, from the policy: sliding
    layers see their window and, inside it, their own image block both ways; full layers see everything before
    them and (Gemma-3 only; Gemma-4 keeps its global layers causal) their whole image block."""
    import torch

    from ..helpers.sliding_window import SlidingWindowPolicy

    policy = SlidingWindowPolicy.from_config(model.config)
    blocks = image_blocks(input_ids)
    # Column indices: with left padding only, column distances are the rows' own position distances.
    columns = torch.arange(input_ids.shape[1], device=input_ids.device)

    def build(sliding: bool, with_blocks: bool) -> Any:
        visible = policy.dense_mask(columns, columns, attention_mask, blocks if with_blocks else None, sliding)
        return policy.additive(visible, model.dtype)

    return {
        "sliding_attention": build(True, True),
        "full_attention": build(False, not is_gemma4(model)),
    }


def image_mask_reference(model: Any, kwargs: dict) -> Any:
    """Logits ``(batch, seq, vocab)`` of a no-cache forward of ``kwargs`` with the policy's masks passed in."""
    import torch

    ref_kwargs = {k: v for k, v in kwargs.items() if k not in ("token_type_ids", "mm_token_type_ids")}
    if is_gemma4(model):
        # Gemma-4 places soft tokens by mm_token_type_ids when given; the ids give the same placement.
        ref_kwargs["mm_token_type_ids"] = kwargs["mm_token_type_ids"]
    ref_kwargs["attention_mask"] = image_masks(model, kwargs["input_ids"], kwargs["attention_mask"])
    with torch.no_grad():
        return model(**ref_kwargs, use_cache=False).logits.float()


def check_image_forward(model: Any, kwargs: dict, what: str, atol: float | None = None) -> dict:
    """A no-cache forward of an image prompt against ``image_mask_reference`` (real tokens only)."""
    import torch

    with torch.no_grad():
        actual = model(**kwargs, use_cache=False).logits.float()
    expected = image_mask_reference(model, kwargs)
    real = kwargs["attention_mask"].bool()
    diff = assert_close(actual[real], expected[real], what, atol=atol)
    return {"max_logit_diff": diff, "positions": int(real.sum())}


def check_image_generation(model: Any, kwargs: dict, what: str, max_new_tokens: int = 4, atol: float | None = None,
                           **generate_kwargs: Any) -> dict:
    """Greedy ``generate()`` of an image prompt, every step's logits against ``image_mask_reference`` of the
    final sequence (prompt + generated tokens; generation runs with no eos so every row has every step)."""
    import torch

    from .generation import generate_steps
    from .outcome import DefectObserved
    from .reference import max_diff

    atol = tolerance(atol)
    extra = {k: v for k, v in kwargs.items() if k not in ("input_ids", "attention_mask")}
    # The tiny vocabulary holds the image tokens: a generated one would be a new image without pixels.
    gen = dict(extra, eos_token_id=None, pad_token_id=0, suppress_tokens=list(range(BOI, 128)))
    gen.update(generate_kwargs)
    run = generate_steps(model, kwargs["input_ids"], kwargs["attention_mask"], max_new_tokens=max_new_tokens,
                         **gen)
    steps = len(run.step_logits)
    final = dict(kwargs)
    final["input_ids"] = run.sequences
    final["attention_mask"] = torch.cat(
        [kwargs["attention_mask"], torch.ones_like(run.sequences[:, :steps])], dim=1)
    for key in ("token_type_ids", "mm_token_type_ids"):
        if key in kwargs:
            final[key] = torch.nn.functional.pad(kwargs[key], (0, steps))
    expected = image_mask_reference(model, final)
    width, worst = run.prompt_width, 0.0
    for t in range(steps):
        diff = max_diff(run.step_logits[t].float(), expected[:, width - 1 + t])
        worst = max(worst, diff)
        if not diff <= atol:
            raise DefectObserved(f"{what}: generated step {t}: max |logit diff| {diff:.3g} vs a no-cache forward "
                                 f"with the sliding-window image masks (atol {atol})", max_logit_diff=diff, step=t)
    return {"max_logit_diff": worst, "steps_compared": steps}
