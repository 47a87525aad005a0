"""model-qwen2-vl-padded-deltas / model-qwen2-5-vl-padded-deltas on the installed release: the M-RoPE offsets of a
left-padded row are those of the row without its padding (5.2 only).

Oracle: the probe (a second turn straight from ``out.past_key_values``, each row against the no-cache forward of
its whole conversation with its image). Where upstream is right -- an unpadded batch, the first turn of a padded one
-- the output must be upstream's, bitwise.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402

import hf_genfix  # noqa: E402
from hf_genfix._patches.models.shared import qwen_vl_padded_deltas as fix  # noqa: E402
from hf_genfix.oracles import DefectObserved, ProbeSkipped  # noqa: E402
from hf_genfix.oracles.sweep import imagetext as imagetext  # noqa: E402

IDS = {"qwen2_vl": "model-qwen2-vl-padded-deltas", "qwen2_5_vl": "model-qwen2-5-vl-padded-deltas"}


@pytest.fixture(scope="module", params=sorted(IDS))
def arch(request):
    from hf_genfix.doctor import import_targets

    import_targets()
    state = next(s.state for s in hf_genfix.status() if s.id == IDS[request.param])
    if state not in ("applied", "forced"):
        pytest.skip(f"{IDS[request.param]} is not installed on this release ({state})")
    return request.param


def test_probe_passes_with_and_fails_without(arch):
    try:
        assert fix._probe(arch)["max_logit_diff"] <= 1e-4
    except ProbeSkipped as exc:
        pytest.skip(str(exc))
    with hf_genfix.disabled(IDS[arch]), pytest.raises(DefectObserved, match="second turn"):
        fix._probe(arch)


@pytest.mark.parametrize("lengths", [(6, 3), (5, 5)])
def test_first_turn_bitwise_upstream(arch, lengths):
    """A plain cached generate() (padded: (6, 3); unpadded when the rows and images make one width) reads its own
    positions: the corrected offsets change nothing there."""
    from hf_genfix.oracles.sweep.families import ImageTextSubject

    s = ImageTextSubject(arch)
    prompts, images = imagetext._rows(s, lengths, seed=40)
    kwargs = imagetext._inputs(s, prompts, images)
    with imagetext.loud(s.model):
        mine = imagetext._generate(s, kwargs, max_new_tokens=3)
        with hf_genfix.disabled(IDS[arch]):
            theirs = imagetext._generate(s, kwargs, max_new_tokens=3)
    assert torch.equal(mine.sequences, theirs.sequences)
    assert all(torch.equal(a, b) for a, b in zip(mine.logits, theirs.logits))
