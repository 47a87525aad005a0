"""drafting-crop-length-tensor (5.15-5.17): prompt lookup and assisted decoding on InklingText past its window give
what a no-cache forward gives; every other crop, and every other model, is upstream's.

The wrapper itself is checked on any release (a 0-d integer tensor is handed on as its int, anything else as it
came). Where the patch is applied: the sweep's InklingText prompt lookup matches plain greedy (and does not with
the patch off), and prompt lookup on a sliding Mistral and a Llama past the window is bitwise upstream's.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix import catalog  # noqa: E402
from hf_genfix.oracles import DefectObserved  # noqa: E402
from hf_genfix.testing.patches import PatchTests, assert_upstream_bitwise  # noqa: E402

PID = "drafting-crop-length-tensor"


def _crop_through_the_wrapper(value, **kwargs):
    calls = []
    catalog.fix(PID)._crop(lambda *a, **k: calls.append((a, k)), None, (value,) if value is not None else (), kwargs)
    return calls


def test_a_0_d_integer_tensor_is_handed_on_as_its_int():
    import torch

    ((args, kwargs),) = _crop_through_the_wrapper(torch.tensor(-3))
    assert args == (-3,) and type(args[0]) is int and kwargs == {}


@pytest.mark.parametrize("value", [-3, 0, 5], ids=["negative", "zero", "positive"])
def test_an_int_goes_through_as_it_came(value):
    ((args, _),) = _crop_through_the_wrapper(value)
    assert args == (value,) and type(args[0]) is int


def test_what_is_no_0_d_integer_tensor_goes_through_as_it_came():
    import torch

    for value in (torch.tensor([-3]), torch.tensor(-3.0), torch.tensor(True)):
        ((args, _),) = _crop_through_the_wrapper(value)
        assert args[0] is value
    ((args, kwargs),) = _crop_through_the_wrapper(None, tokens_to_remove=torch.tensor(-3))
    assert args == () and "tokens_to_remove" in kwargs  # a keyword call: upstream's, untouched


@pytest.fixture
def subject(require_applied):
    """The sweep's InklingText (its tame weights: the open finding's [115, 92, 115, 92, 115] without the patch)."""
    from hf_genfix.oracles.sweep import Subject

    require_applied(PID)
    return Subject("inkling_text")


@pytest.mark.parametrize("scenario", ["prompt-lookup-plain", "prompt-lookup"])
def test_inkling_prompt_lookup_is_plain_greedy(subject, scenario):
    from hf_genfix.oracles.sweep import SCENARIOS

    figures = SCENARIOS[scenario](subject)  # raises DefectObserved where prompt lookup is not plain greedy
    assert figures["tokens"] >= 5


def test_without_the_patch_inkling_prompt_lookup_is_wrong(subject):
    from hf_genfix.oracles.sweep import SCENARIOS

    with hf_genfix.disabled(PID), pytest.raises(DefectObserved):
        SCENARIOS["prompt-lookup-plain"](subject)


@pytest.mark.parametrize("model_type", ["mistral", "llama"])
def test_prompt_lookup_elsewhere_is_bitwise_upstream(require_applied, model_type):
    """Mistral's sliding layers past the window store the tensor too, but nothing reads the length before the
    update there: upstream is right, and the patch leaves it bit for bit."""
    import torch

    from hf_genfix.oracles.sweep import Subject

    require_applied(PID)
    model = Subject(model_type).model
    ids = torch.tensor([[38, 81, 69, 3, 57, 22] * 3])
    assert_upstream_bitwise(model, PID, ids, attention_mask=torch.ones_like(ids), prompt_lookup_num_tokens=3,
                            max_new_tokens=8)


class TestPatch(PatchTests):
    """``drafting-crop-length-tensor``: its probe proves it on this release; its plain program gets it installed."""
