"""model-mamba-state-chunk, model-falcon-mamba-state-chunk: before 5.17, several tokens after a (Falcon-)Mamba cache
that holds a state are refused loudly.

Where the patch applies: generate() continuing a forward's cache_params raises MambaStateChunkUnsupported naming the
switch (upstream is silently wrong there, checked with the patch off); a plain cached generate() and one token at a
time after a cache are bitwise upstream's.
"""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix import catalog  # noqa: E402
from hf_genfix.oracles import DefectObserved  # noqa: E402
from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps  # noqa: E402
from hf_genfix.oracles.sweep.continuations import loud_model  # noqa: E402

from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise  # noqa: E402

MambaStateChunkUnsupported = catalog.fix("model-mamba-state-chunk").MambaStateChunkUnsupported

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PATCHES = {"mamba": "model-mamba-state-chunk", "falcon_mamba": "model-falcon-mamba-state-chunk"}
ROW, TURN = [17, 44, 91, 23, 5, 60, 12, 77, 30, 9], [40, 41, 42]


@pytest.fixture(scope="module", params=list(PATCHES))
def mamba(request):
    from hf_genfix.doctor import import_targets

    import_targets()  # the patches decided before this module-scoped fixture (the autouse one is per test)
    patch = PATCHES[request.param]
    if next(s for s in hf_genfix.status() if s.id == patch).state not in ("applied", "forced"):
        pytest.skip(f"{patch} does not apply to this release")
    return patch, loud_model(request.param)


def _continue(model):
    import torch

    with torch.no_grad():
        cache = model(torch.tensor([ROW]), use_cache=True).cache_params
    ids = torch.tensor([ROW + TURN])
    run = generate_steps(model, ids, torch.ones_like(ids), max_new_tokens=4, cache_params=copy.deepcopy(cache),
                         pad_token_id=0, eos_token_id=None, min_new_tokens=4)
    return check_rows_against_reference(model, [ROW + TURN], run, "mamba cache_params continued", eos_token_id=[])


def test_continuing_a_state_with_several_tokens_is_refused(mamba):
    patch, model = mamba
    with pytest.raises(MambaStateChunkUnsupported, match=f"HF_GENFIX_{patch.upper().replace('-', '_')}=off"):
        _continue(model)


def test_without_the_patch_it_is_silently_wrong(mamba):
    patch, model = mamba
    with hf_genfix.disabled(patch):
        try:
            _continue(model)
        except DefectObserved:
            return
        except RuntimeError as exc:  # 5.4.0: upstream's mixer raises on this call (loud: nothing silent to show)
            pytest.skip(f"upstream raises on this continuation here: {exc}")
    pytest.fail("upstream's continuation matched the no-cache forward: no defect for this patch to refuse")


def test_a_plain_cached_generate_is_upstreams(mamba):
    import torch

    patch, model = mamba
    ids = torch.tensor([ROW, [0, 0] + ROW[:8]])
    assert_upstream_bitwise(model, patch, ids, attention_mask=(ids != 0).long())


class TestPatch(PatchTests):
    """``model-mamba-state-chunk``: its probe proves it on this release; its plain program gets it installed."""
