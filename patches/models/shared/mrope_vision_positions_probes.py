"""The probes of ``model-qwen2-5-vl-vision-positions``, ``model-qwen2-vl-vision-positions``: the defect, and how it
is detected, are in ``mrope_vision_positions.py``'s docstring.
"""

from __future__ import annotations

from typing import Any


def probe_qwen2_5_vl() -> dict:
    """One image (one frame), then a video of two temporal patches of 2x5 tokens at Qwen2.5-VL's interval
    (``tokens_per_second``, 4 in the tiny config): 5.3-5.5.3 place the image wrong, and every release to 5.5.4 the
    video (5.5.4 fixed the image's interval in ``get_rope_index``, not the block's frames). The video stays where
    the releases agree on the definition: its temporal positions below its height and width in tokens (beyond, 4.x
    and 5.2 start the text after it after the block's largest position, 5.6 on at ``start + max(h, w)``)."""
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep.families import IMAGE
    from hf_genfix.oracles.sweep.video import VIDEO

    image = _probe("qwen2_5_vl", IMAGE, (1, 4, 8))
    try:
        video = _probe("qwen2_5_vl", VIDEO, (2, 4, 10))
    except ProbeSkipped:
        return image
    return {"max_logit_diff": max(image["max_logit_diff"], video["max_logit_diff"])}


def probe_qwen2_vl() -> dict:
    """A video of two temporal patches (interval 1: the frames and the heights; Qwen2-VL's images are right)."""
    from hf_genfix.oracles.sweep.video import VIDEO  # the sweep's tiny Qwen-VL configs' video_token_id

    return _probe("qwen2_vl", VIDEO, (2, 4, 4))


def _probe(arch: str, token: int, grid: tuple) -> dict:
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep.families import ImageTextSubject
    from hf_genfix.oracles.sweep.imagetext import loud

    s = ImageTextSubject(arch)
    if s.forward_defines_no_mrope():
        # 4.46's Qwen2-VL forward computes no M-RoPE positions without position_ids (prepare_inputs_for_generation
        # does): its own forward is not the function this probe measures (2.79 there by construction)
        raise ProbeSkipped(f"this release's {arch} forward computes no M-RoPE positions of its own")
    with loud(s.model):
        return _check(s, token, grid)


def _check(s: Any, token: int, grid: tuple) -> dict:
    import inspect

    import torch

    from hf_genfix.oracles import ProbeSkipped, reference
    from hf_genfix.oracles.sweep.families import BOI, EOI
    from hf_genfix.oracles.sweep.video import VIDEO, mrope_positions
    from hf_genfix.oracles.sweep.video import interval as video_interval

    config = s.model.config
    merge = config.vision_config.spatial_merge_size
    temporal_patch = config.vision_config.temporal_patch_size
    t, h, w = grid[0], grid[1] // merge, grid[2] // merge  # grid_thw in patches; the block's tokens: t x h x w
    gen = torch.Generator().manual_seed(7)
    ids = [1, 11, 12, BOI] + [token] * (t * h * w) + [EOI, 13, 14, 15, 16]
    patches = torch.rand(grid[0] * grid[1] * grid[2], 3 * temporal_patch * 4, generator=gen)  # 2x2-pixel patches
    kind = "image" if token != VIDEO else "video"
    kwargs: dict[str, Any] = {f"pixel_values{'' if kind == 'image' else '_videos'}": patches.to(s.model.dtype),
                              f"{kind}_grid_thw": torch.tensor([list(grid)])}
    input_ids = torch.tensor([ids])
    if "mm_token_type_ids" in inspect.signature(s.model.forward).parameters:
        kwargs["mm_token_type_ids"] = torch.tensor([[{token: 1 if kind == "image" else 2}.get(i, 0) for i in ids]])
    # a video's interval is Qwen2.5-VL's tokens_per_second (one second per temporal patch), 1 on Qwen2-VL; an image
    # has one frame, whose positions no interval moves
    interval = video_interval(config) if kind == "video" else 1
    positions = mrope_positions(ids, token, (t, h, w), interval)
    with torch.no_grad():
        try:
            own = s.model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **kwargs).logits[0]
        except ValueError as exc:
            if kind == "video" and "Video features and video tokens do not match" in str(exc):
                # 4.54's Qwen2-VL looks for a video's placeholders under image_token_id: it refuses every video
                # (loud, another defect); nothing to measure here
                raise ProbeSkipped(f"this release's {config.model_type} refuses a video: {exc}") from exc
            raise
        defined = s.model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), position_ids=positions,
                          **kwargs).logits[0]
    diff = reference.assert_close(own.float(), defined.float(), f"{config.model_type}: the forward of a prompt with "
                                  f"one {kind} ({t} frame(s) of {h}x{w} tokens) vs the same forward given the M-RoPE "
                                  "positions of the definition")
    return {"max_logit_diff": diff}


# -- the checks both patches' tests make (each test names its patch and the method it wraps) ------------------------
GRIDS = [((2, 4, 6), 1), ((3, 2, 2), 2), ((1, 4, 8), 2), ((4, 6, 4), 25)]  # (t, h, w) in patches, interval


def check_block_positions(patch: str, method: Any, grid: tuple, interval: int) -> None:
    """``method`` (a class's ``get_vision_position_ids``) gives the definition's positions for a block of ``grid``
    patches (merged 2x2) at ``interval``, and upstream's differ (the check can fail)."""
    import torch

    import hf_genfix

    got = method(None, 5, torch.tensor(grid), 1, 2, interval)
    t, h, w = grid[0], grid[1] // 2, grid[2] // 2
    want = torch.tensor([[5 + f * interval, 5 + i, 5 + j] for f in range(t) for i in range(h) for j in range(w)]).T
    assert torch.equal(got.long(), want)
    with hf_genfix.disabled(patch):
        upstream = method(None, 5, torch.tensor(grid), 1, 2, interval)
    assert not torch.equal(upstream.long(), want)


def check_one_frame_is_upstream(patch: str, method: Any) -> None:
    """A one-frame block at interval 1 (a tensor start, as get_rope_index passes after a first block) is upstream's
    tensor, dtype included."""
    import torch

    import hf_genfix

    with hf_genfix.disabled(patch):
        upstream = method(None, torch.tensor(3), torch.tensor([1, 4, 6]), 1, 2)
    got = method(None, torch.tensor(3), torch.tensor([1, 4, 6]), 1, 2)
    assert torch.equal(got, upstream) and got.dtype == upstream.dtype
