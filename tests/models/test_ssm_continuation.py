"""The models family's ``ssm_continuation``: ``has_state`` (every form of a cache's "holds a state" it meets
upstream), ``_all_linear`` (which caches a continuation may be sliced by) and ``_leading_pads_of_empty_rows``
(which pads in a chunk after a state may be split: a left-padded batch's, in rows with nothing in their state)."""

from __future__ import annotations

import pytest

from hf_genfix._patches.models.shared.ssm_continuation import _all_linear, _leading_pads_of_empty_rows, has_state


class _Flag:  # the hybrid caches before 5.17: one bool for every layer
    def __init__(self, flag):
        self.has_previous_state = flag


class _PerLayer:  # 5.5+: has_previous_state(layer_idx)
    def __init__(self, layers):
        self.layers = layers

    def has_previous_state(self, layer_idx=None):
        return bool(self.layers) if layer_idx is None else layer_idx in self.layers


class _NoArgument:  # OlmoHybrid 5.3-5.14, Qwen3-Next before 5.5: "the last linear layer holds a state"
    def __init__(self, flag):
        self.flag = flag

    def has_previous_state(self):
        return self.flag


def test_a_bool_flag_is_read_as_it_is():
    assert has_state(_Flag(True), 0) and not has_state(_Flag(False), 0)


def test_a_per_layer_method_is_asked_for_the_layer():
    cache = _PerLayer({1})
    assert has_state(cache, 1) and not has_state(cache, 0) and has_state(cache)


def test_a_method_that_takes_no_layer_is_asked_without_one():
    # Before session 22 it was called with the layer, raised TypeError and read as "no state": the patch never split.
    assert has_state(_NoArgument(True), 0) and not has_state(_NoArgument(False), 0)


def test_anything_else_holds_no_state():
    assert not has_state(object(), 0) and not has_state(None)


class _OwnCache:  # a model's own cache class (5.4's Mamba2Cache): conv_states and ssm_states, no layers
    has_previous_state = True


def test_a_model_specific_cache_is_sliced_by_only_where_its_fix_names_its_class():
    # 5.4's Mamba-2 (session 27): its own Mamba2Cache, named by model-mamba2-continuation's fix. Any other cache
    # without layers (4.x's, a subclass, a look-alike) is upstream's: its layout is never guessed.
    assert _all_linear(_OwnCache(), (_OwnCache,))
    assert not _all_linear(_OwnCache())
    assert not _all_linear(type("Sub", (_OwnCache,), {})(), (_OwnCache,))
    assert not _all_linear(_Flag(True), (_OwnCache,))


class _Layer:
    def __init__(self, conv, recurrent):
        self.conv_states, self.recurrent_states = conv, recurrent


class _Layers:  # 5.5+: cache.layers[i].conv_states / recurrent_states (one per state from 5.24: a dict or list)
    def __init__(self, *layers):
        self.layers = list(layers)


class _Lists:  # the hybrid caches before 5.5: per-layer lists conv_states / ssm_states
    def __init__(self, conv, ssm):
        self.conv_states, self.ssm_states = [conv], [ssm]


def _states(empty_rows):
    """A conv window (batch, channels, kernel) and a recurrent state (batch, heads, state) of 3 rows, zero in
    ``empty_rows`` only."""
    torch = pytest.importorskip("torch")
    conv, ssm = torch.ones(3, 4, 4), torch.ones(3, 2, 8)
    for row in empty_rows:
        conv[row], ssm[row] = 0, 0
    return conv, ssm


@pytest.mark.parametrize("layout", ["layer", "layer-dict", "lists"])
def test_left_pads_of_rows_with_empty_states_are_split(layout):
    torch = pytest.importorskip("torch")
    conv, ssm = _states(empty_rows=(1, 2))
    cache = {"layer": lambda: _Layers(_Layer(conv, ssm)), "layer-dict": lambda: _Layers(_Layer({0: conv}, [ssm])),
             "lists": lambda: _Lists(conv, ssm)}[layout]()
    fed = torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0]])
    assert _leading_pads_of_empty_rows(cache, 0, fed)


def test_every_other_pad_is_upstreams():
    torch = pytest.importorskip("torch")
    conv, ssm = _states(empty_rows=(1,))
    cache = _Layers(_Layer(conv, ssm))
    # a row that holds a state (row 0), a pad after a token (row 1), a mask of weights (row 1)
    assert not _leading_pads_of_empty_rows(cache, 0, torch.tensor([[0, 1, 1], [1, 1, 1], [1, 1, 1]]))
    assert not _leading_pads_of_empty_rows(cache, 0, torch.tensor([[1, 1, 1], [1, 0, 1], [1, 1, 1]]))
    assert not _leading_pads_of_empty_rows(cache, 0, torch.tensor([[1, 1, 1], [0.5, 1, 1], [1, 1, 1]]))
    # a layout we do not know, a layer past the cache's, a state of another batch
    assert not _leading_pads_of_empty_rows(object(), 0, torch.tensor([[1, 1, 1], [0, 1, 1], [1, 1, 1]]))
    assert not _leading_pads_of_empty_rows(cache, 3, torch.tensor([[1, 1, 1], [0, 1, 1], [1, 1, 1]]))
    assert not _leading_pads_of_empty_rows(_Layers(_Layer(conv[:2], ssm[:2])), 0,
                                           torch.tensor([[1, 1, 1], [0, 1, 1], [1, 1, 1]]))
