"""model-fsmt-uncached-mask on the installed release: FSMT's generate(use_cache=False) masks its decoder as a plain
forward does.

Oracle: a no-cache forward of the source and the final decoder sequence (the probe). Where upstream is right -- a
cached generate(), a forward given input_ids, a one-token decoder -- the output must be upstream's, bitwise.
"""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402

import hf_genfix  # noqa: E402
from hf_genfix import catalog  # noqa: E402
from hf_genfix.oracles import DefectObserved  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

probe = catalog.probe_module("model-fsmt-uncached-mask").probe
tiny_fsmt = catalog.probe_module("model-fsmt-uncached-mask").tiny_fsmt

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test

PID = "model-fsmt-uncached-mask"


@pytest.fixture(autouse=True)
def patches_decided():
    from hf_genfix.doctor import import_targets

    import_targets()


def _state() -> str:
    return next(s for s in hf_genfix.status() if s.id == PID).state


@pytest.fixture(scope="module")
def model():
    return tiny_fsmt()


SOURCE = torch.tensor([[5, 9, 17, 33, 9, 40, 61, 7, 12], [44, 3, 90, 21, 8, 8, 100, 4, 3]])


def test_probe_passes_with_and_fails_without():
    if _state() not in ("applied", "forced"):
        pytest.skip(f"{PID} is not installed on this release ({_state()})")
    assert probe()["steps"] == 6
    with hf_genfix.disabled(PID), pytest.raises(DefectObserved):
        probe()


def _both(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            mine = call()
            with hf_genfix.disabled(PID):
                theirs = call()
    return mine, theirs


@pytest.mark.parametrize("call", ["cached", "forward", "one-token"])
def test_upstream_right_left_bitwise(model, call):
    mask = torch.ones_like(SOURCE)
    calls = {
        "cached": lambda: model.generate(SOURCE, attention_mask=mask, max_new_tokens=5, do_sample=False,
                                         use_cache=True, return_dict_in_generate=True, output_logits=True).logits,
        "forward": lambda: [model(input_ids=SOURCE, attention_mask=mask, decoder_input_ids=SOURCE[:, :5],
                                  use_cache=False).logits],
        "one-token": lambda: model.generate(SOURCE, attention_mask=mask, max_new_tokens=1, do_sample=False,
                                            use_cache=False, return_dict_in_generate=True,
                                            output_logits=True).logits,
    }
    mine, theirs = _both(calls[call])
    assert all(torch.equal(a, b) for a, b in zip(mine, theirs))


def test_uncached_batch_matches_each_rows_forward(model):
    """A batch of two sources without cache: every row's steps are its own no-cache forward's."""
    mask = torch.ones_like(SOURCE)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model.generate(SOURCE, attention_mask=mask, max_new_tokens=5, do_sample=False, use_cache=False,
                             return_dict_in_generate=True, output_logits=True)
        for b in range(SOURCE.shape[0]):
            ref = model(input_ids=SOURCE[b : b + 1], decoder_input_ids=out.sequences[b : b + 1],
                        use_cache=False).logits[0]
            for t, logits in enumerate(out.logits):
                assert torch.allclose(logits[b], ref[t], atol=1e-4), (b, t, (logits[b] - ref[t]).abs().max())


class TestPatch(PatchTests):
    """``model-fsmt-uncached-mask``: its probe proves it on this release; its plain program gets it installed."""
