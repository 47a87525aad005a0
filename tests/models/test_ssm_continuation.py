"""The models family's ``ssm_continuation``: ``has_state`` (every form of a cache's "holds a state" it meets
upstream) and ``_all_linear`` (which caches a continuation may be sliced by)."""

from __future__ import annotations

from hf_genfix._patches.models.shared.ssm_continuation import _all_linear, has_state


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
