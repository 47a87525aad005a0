"""model-qwen2-5-vl-vision-positions: on 5.3.0-5.5.x Qwen2.5-VL's M-RoPE positions of a vision block follow the
definition (5.6's).

``get_vision_position_ids`` put every frame of a block at ``start * time_interval``: a video's frames share one
temporal position and their heights interleave, and Qwen2.5-VL's images (interval ``tokens_per_second``) sit at an
inflated temporal position (to 5.5.3). With the patch: the forward of a prompt with an image, and of one with a
video, equals the forward given the definition's positions (the probe), a block's positions are the definition's, and a one-frame block at interval 1
is upstream's tensor itself. Without it (``hf_genfix.disabled``) the positions differ. Outside the range the patch
is not installed and the tests are skipped.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hf_genfix._patches.models.shared.mrope_vision_positions_probes import (  # noqa: E402
    GRIDS,
    check_block_positions,
    check_one_frame_is_upstream,
)
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PATCH = "model-qwen2-5-vl-vision-positions"


@pytest.fixture(scope="module")
def method(require_applied):
    require_applied(PATCH)
    from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl

    return modeling_qwen2_5_vl.Qwen2_5_VLModel.get_vision_position_ids


@pytest.mark.parametrize("grid,interval", GRIDS)
def test_a_block_gets_the_definition(method, grid, interval):
    check_block_positions(PATCH, method, grid, interval)


def test_one_frame_at_interval_one_is_upstream_s_tensor(method):
    check_one_frame_is_upstream(PATCH, method)


class TestPatch(PatchTests):
    """``model-qwen2-5-vl-vision-positions``: its probe proves it on this release; its plain program gets it
    installed."""
