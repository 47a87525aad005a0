"""The video scenarios of ``hf-genfix doctor --sweep`` (``oracles.sweep.video``): the definition's M-RoPE positions
written out by hand, the scenarios pass where the release is right, and they catch a video whose frames share one
temporal position (5.3-5.5's defect, injected here through ``get_rope_index``), which no cache equivalence sees."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_genfix.oracles import DefectObserved, sweep  # noqa: E402
from hf_genfix.oracles.sweep import families, video  # noqa: E402

NAMES = list(video.SCENARIOS)


def test_the_scenarios_are_image_text_and_decline_models_without_video_positions():
    assert {sweep.kind_of(sweep.SCENARIOS[n]) for n in NAMES} == {"image-text"}
    llava = families.ImageTextSubject("llava")
    assert "get_rope_index" in sweep.SCENARIOS[NAMES[0]].declines(llava)


def test_the_definition_by_hand():
    """Text one apart; a video of 2 frames of 1x2 tokens at interval 3 after 2 text tokens (start 2); the text after
    it from start + max(h, w) = 4."""
    v = video.VIDEO
    got = video.mrope_positions([1, 5, v, v, v, v, 6, 7], v, (2, 1, 2), 3)
    assert got.shape == (3, 1, 8)
    assert got[:, 0].tolist() == [[0, 1, 2, 2, 5, 5, 4, 5],
                                  [0, 1, 2, 2, 2, 2, 4, 5],
                                  [0, 1, 2, 3, 2, 3, 4, 5]]


def test_the_definition_of_two_kinds_of_block_by_hand():
    """An image of 1x2 tokens (one frame) at position 1, then a video of 2 frames of 1x1 at interval 2 at position
    4: each block's text after it from its start + max(h, w)."""
    i, v = families.IMAGE, video.VIDEO
    got = video.block_positions([1, i, i, 7, v, v, 8], {i: [(1, 1, 2, 1)], v: [(2, 1, 1, 2)]})
    assert got[:, 0].tolist() == [[0, 1, 1, 3, 4, 6, 5],
                                  [0, 1, 1, 3, 4, 4, 5],
                                  [0, 1, 2, 3, 4, 4, 5]]


def _subject(arch):
    try:
        s = families.ImageTextSubject(arch)
    except Exception as exc:  # noqa: BLE001 - 4.46-4.51 cannot build the tiny Qwen-VL configs
        pytest.skip(f"{arch} is not built tiny on this release: {exc}")
    if sweep.SCENARIOS[NAMES[0]].declines(s):
        pytest.skip(f"this release's {arch} takes no video")
    return s


def _upstream_right():
    """5.3-5.5 have the defect (model-qwen2-vl-vision-positions); 4.54 refuses a video in words."""
    import transformers
    from packaging.version import Version

    v = Version(transformers.__version__)
    return v >= Version("5.6.0") or Version("4.55.0") <= v < Version("5.0.0")


@pytest.mark.parametrize("arch", ["qwen2_vl", "qwen2_5_vl"])
@pytest.mark.parametrize("name", NAMES)
def test_right_where_upstream_is_right(arch, name):
    if not _upstream_right():
        pytest.skip("this release's video positions are not upstream-right")
    s = _subject(arch)
    assert sweep.SCENARIOS[name](s)["max_logit_diff"] < 1e-4


@pytest.mark.parametrize("arch", ["qwen2_vl", "qwen2_5_vl"])
def test_frames_sharing_one_temporal_position_are_caught(arch, monkeypatch):
    if not _upstream_right():
        pytest.skip("this release's video positions are not upstream-right")
    s = _subject(arch)
    owner = s.model.model if hasattr(getattr(s.model, "model", None), "get_rope_index") else s.model
    plain = owner.get_rope_index

    def every_frame_at_its_start(*args, **kwargs):
        positions, deltas = plain(*args, **kwargs)
        ids = kwargs["input_ids"] if "input_ids" in kwargs else args[0]
        block = ids == video.VIDEO
        for b in range(ids.shape[0]):
            if block[b].any():
                positions[0, b, block[b]] = positions[0, b, block[b]].min()
        return positions, deltas

    monkeypatch.setattr(owner, "get_rope_index", every_frame_at_its_start)  # this model's instance only
    with pytest.raises(DefectObserved, match="given the M-RoPE positions of the definition") as caught:
        sweep.SCENARIOS["video-loud-cached-padded"](s)
    assert caught.value.figures["max_logit_diff"] > 0.01  # loud, far above rounding
