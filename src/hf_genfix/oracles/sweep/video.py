"""Videos on M-RoPE models (Qwen2-VL, Qwen2.5-VL), against the positions of the definition (issue 36, section 1).

Why a scenario of its own. On 5.3-5.5 ``get_vision_position_ids`` gives every frame of a video one temporal
position and interleaves the heights across frames (``model-qwen2-vl-vision-positions``). Every path runs the same
function: the cached ``generate()``, the no-cache forward of the row, a second turn, a chunk after the cache. So no
cache equivalence sees it, and the sweep missed it on 5.5.0 while the probe found it (these scenarios then found
Qwen2.5-VL's videos wrong on 5.5.4 too, past the range its image probe had measured). The oracle is the definition
itself: the row's no-cache forward given the M-RoPE positions that Qwen2-VL defines (``mrope_positions``) as
``position_ids``. That forward reads them as given, on every release the sweep builds these models on.

The definition is only settled where a video's temporal positions stay below its height and width in tokens
(``(t - 1) * interval < max(h, w)``): beyond, the releases disagree on where the text after the block starts (4.x and
5.2: after the block's largest position; 5.6 on: ``start + max(h, w)``). The grids here keep within it at Qwen2.5-VL's
interval (``tokens_per_second``, 4 in the tiny config, one second per temporal patch when the call gives no
``second_per_grid_ts``): two temporal patches of 2 x 5 and 2 x 6 tokens, so a batch's rows differ in length.

The scenarios (loud weights, ``imagetext.loud``): a left-padded batch of two rows, each with its own video, by
cached ``generate()``; the same with an image before each video (two kinds of block in a row, images of two sizes
in the batch); and a second turn that continues from the first turn's returned cache (the whole
conversation given again, the videos in the cache).
"""

from __future__ import annotations

import inspect
from typing import Any, Sequence

from ..outcome import ProbeSkipped, earlier_stage
from . import core as sweep
from .families import BOI, EOI, IMAGE, IMAGE_TEXT_KIND, _mask
from .imagetext import _check, _generate, _returned_cache, loud

VIDEO = 123  # the tiny Qwen-VL configs' video_token_id (families._qwen2_vl), among the suppressed placeholders
GRIDS = ((2, 4, 10), (2, 4, 12))  # (t, h, w) in patches, merged 2x2: 2 x 2 x 5 and 2 x 2 x 6 tokens
IMAGE_GRIDS = ((1, 4, 8), (1, 4, 4))  # an image before the video (video-image-loud-cached-padded): 8 and 4 tokens


def mrope_positions(ids: Sequence[int], token: int, thw: tuple, interval: int) -> Any:
    """M-RoPE positions as Qwen2-VL defines them, shape (3, 1, len(ids)), for prompts whose vision blocks are all of
    ``token`` and of one size (``thw`` = t x h x w tokens): ``block_positions``."""
    import itertools

    return block_positions(ids, {token: itertools.repeat((*thw, interval))})


def block_positions(ids: Sequence[int], blocks: dict) -> Any:
    """M-RoPE positions as Qwen2-VL defines them, shape (3, 1, len(ids)): text tokens one apart on all three rows;
    the token (f, i, j) of a vision block at (start + f * interval, start + i, start + j); the text after the block
    from start + max(h, w) on. ``blocks``: placeholder id -> the (t, h, w, interval) of its blocks, in order."""
    import torch

    sizes = {token: iter(each) for token, each in blocks.items()}
    rows: list[list[int]] = [[], [], []]
    pos, k = 0, 0
    while k < len(ids):
        if ids[k] not in sizes:
            for r in rows:
                r.append(pos)
            pos, k = pos + 1, k + 1
            continue
        t, h, w, step = next(sizes[ids[k]])
        for f in range(t):
            for i in range(h):
                for j in range(w):
                    rows[0].append(pos + f * step)
                    rows[1].append(pos + i)
                    rows[2].append(pos + j)
        pos, k = pos + max(h, w), k + t * h * w
    return torch.tensor(rows).unsqueeze(1)


def interval(config: Any) -> int:
    """The temporal positions between two temporal patches of a video: Qwen2.5-VL's ``tokens_per_second`` (one
    second per patch when the call gives no ``second_per_grid_ts``); 1 on Qwen2-VL, which has no clock."""
    if config.model_type.startswith("qwen2_5"):
        return int(getattr(config.vision_config, "tokens_per_second", None) or 1)
    return 1


class _Videos:
    """One subject's video rows: prompts, pixels, the batch and each row's reference."""

    def __init__(self, s: Any):
        self.s = s
        config = s.model.config
        self.merge = config.vision_config.spatial_merge_size
        self.patch_floats = 3 * config.vision_config.temporal_patch_size * config.vision_config.patch_size ** 2
        self.interval = interval(config)
        self.types = "mm_token_type_ids" in inspect.signature(s.model.forward).parameters

    def tokens(self, grid: tuple) -> tuple:
        return grid[0], grid[1] // self.merge, grid[2] // self.merge

    def rows(self, lengths: tuple, seed: int, images: bool = False) -> tuple[list[list[int]], list[dict], list[dict]]:
        """Prompts of ``lengths`` text tokens, each with its own video (and, with ``images``, an image of 4x8 or 4x4
        patches before it); per row its pixels and its blocks (placeholder id -> sizes, for ``block_positions``)."""
        import torch

        from ..precision import current

        prompts, pixels, blocks = [], [], []
        gen = torch.Generator().manual_seed(seed)
        device, dtype = self.s.model.device, current().torch_dtype
        for b, (n, grid) in enumerate(zip(lengths, GRIDS)):
            text = torch.randint(3, 100, (n,), generator=gen, device="cpu").tolist()
            t, h, w = self.tokens(grid)
            video = [BOI] + [VIDEO] * (t * h * w) + [EOI]
            inputs = {"pixel_values_videos": self._patches(grid, gen).to(device, dtype),
                      "video_grid_thw": torch.tensor([list(grid)], device=device)}
            sizes = {VIDEO: [(t, h, w, self.interval)]}
            image = []
            if images:
                still = IMAGE_GRIDS[b % len(IMAGE_GRIDS)]
                ti, hi, wi = self.tokens(still)
                image = [BOI] + [IMAGE] * (ti * hi * wi) + [EOI]
                inputs.update(pixel_values=self._patches(still, gen).to(device, dtype),
                              image_grid_thw=torch.tensor([list(still)], device=device))
                sizes[IMAGE] = [(ti, hi, wi, 1)]  # one frame: no interval moves it
            # the video after the second text token, as before images were added; an image after the first
            prompts.append([1] + text[:1] + image + text[1:2] + video + text[2:])
            pixels.append(inputs)
            blocks.append(sizes)
        return prompts, pixels, blocks

    def _patches(self, grid: tuple, gen: Any) -> Any:
        import torch

        return torch.rand(grid[0] * grid[1] * grid[2], self.patch_floats, generator=gen, device="cpu")

    def token_types(self, ids: Any) -> dict:
        """5.x takes the processor's ``mm_token_type_ids`` (1 on an image's placeholders, 2 on a video's); 4.x reads
        the ids."""
        return {"mm_token_type_ids": (ids == IMAGE).long() + (ids == VIDEO).long() * 2} if self.types else {}

    def batch(self, prompts: list[list[int]], videos: list[dict]) -> dict:
        import torch

        from ..generation import left_pad

        ids, mask = left_pad(prompts, device=self.s.model.device)
        kwargs = dict(input_ids=ids, attention_mask=mask, **self.token_types(ids))
        for key in videos[0]:
            kwargs[key] = torch.cat([video[key] for video in videos])
        return kwargs

    def reference(self, tokens: Sequence[int], video: dict, blocks: dict) -> Any:
        """The no-cache forward of the unpadded row with its pixels, given the definition's positions."""
        import torch

        ids = torch.tensor([list(tokens)], device=self.s.model.device)
        positions = block_positions(tokens, blocks).to(ids.device)
        with torch.no_grad():
            out = self.s.model(input_ids=ids, attention_mask=torch.ones_like(ids), position_ids=positions,
                               **video, **self.token_types(ids), use_cache=False)
        return _mask(out.logits[0].float())

    def generate(self, kwargs: dict, **options: Any) -> Any:
        # 4.54's Qwen2-VL counts a video's placeholders under image_token_id and refuses every video in words
        # ("Video features and video tokens do not match"): left to raise, a loud upstream error.
        return _generate(self.s, kwargs, **options)

    def check(self, prompts: list[list[int]], videos: list[dict], blocks: list[dict], out: Any, width: int,
              what: str) -> dict:
        return _check(self.s, prompts, videos, out, width, what,
                      reference=lambda b, tokens: self.reference(tokens, videos[b], blocks[b]))


def cached(s: Any, images: bool = False) -> dict:
    """A left-padded batch of two rows, each with its own video (and with ``images`` an image before it), by
    cached ``generate()``."""
    v = _Videos(s)
    prompts, videos, blocks = v.rows((6, 3), seed=70, images=images)
    kwargs = v.batch(prompts, videos)
    out = v.generate(kwargs, max_new_tokens=5)
    return v.check(prompts, videos, blocks, out, kwargs["input_ids"].shape[1],
                   f"a left-padded batch of two rows, each with its own {'image and ' if images else ''}video, by "
                   "cached generate(), vs the no-cache forward of the row given the M-RoPE positions of the "
                   "definition")


def second_turn(s: Any) -> dict:
    """Turn 1 generates 3 tokens (checked first); turn 2 gives the whole conversation with 4 new text tokens, its
    token types and no pixels (the videos are in the cache), with ``past_key_values=out.past_key_values``. Not the
    pixels again: Qwen2-VL's generate() keeps them on a continuation's first step and then refuses its uncached
    tokens, which hold no placeholder, in words (the image scenario ``image-second-turn-padded`` shows that)."""
    v = _Videos(s)
    prompts, videos, blocks = v.rows((6, 3), seed=80)
    kwargs = v.batch(prompts, videos)
    width = kwargs["input_ids"].shape[1]
    first = v.generate(kwargs, max_new_tokens=3)
    with earlier_stage():
        v.check(prompts, videos, blocks, first, width, "video second turn: the first turn")
    said = [first.sequences[b, width:].tolist() + [7, 8, 9, 10] for b in range(len(prompts))]
    so_far = [p + said[b] for b, p in enumerate(prompts)]
    cache = _returned_cache(first)
    if cache is None:
        raise ProbeSkipped("generate() returned no cache")
    kwargs2 = {k: x for k, x in v.batch(so_far, videos).items() if k not in videos[0]}
    second = v.generate(kwargs2, max_new_tokens=4, past_key_values=cache)
    return v.check(so_far, videos, blocks, second, kwargs2["input_ids"].shape[1],
                   "video second turn from out.past_key_values vs the whole conversation, given the M-RoPE "
                   "positions of the definition")


def declines(s: Any) -> str:
    """Only models with M-RoPE positions (``get_rope_index``) that take a video."""
    inner = getattr(s.model, "model", s.model)
    if not (hasattr(inner, "get_rope_index") or hasattr(s.model, "get_rope_index")):
        return "no M-RoPE positions (get_rope_index): no video positions to define"
    if getattr(s.model.config, "video_token_id", None) != VIDEO:
        return "takes no video (no video_token_id in the tiny config)"
    return ""


def cached_with_images(s: Any) -> dict:
    """``cached`` with an image before each row's video: two kinds of block in a row, of two sizes in the batch."""
    return cached(s, images=True)


SCENARIOS = {"video-loud-cached-padded": cached, "video-image-loud-cached-padded": cached_with_images,
             "video-second-turn-padded": second_turn}


def _register(name: str, func: Any) -> None:
    def run(s: Any) -> dict:
        with loud(s.model):
            return func(s)

    run.__name__ = name.replace("-", "_")
    run.__doc__ = func.__doc__ or f"{name}: a left-padded batch of two rows with videos, loud weights"
    run.declines = declines  # type: ignore[attr-defined]
    sweep.scenario(name, needs=("padding",), kind=IMAGE_TEXT_KIND)(run)


for _name, _func in SCENARIOS.items():
    _register(_name, _func)
