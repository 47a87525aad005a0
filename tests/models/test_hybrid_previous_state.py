"""The models family's ``hybrid_previous_state``: the flag is set where upstream's own line meant to set it and only
its truthiness test stopped it (4.54.0-4.55.2's hybrid caches), and nowhere else."""

from __future__ import annotations

from hf_genfix._patches.models.shared.hybrid_previous_state import _forward


class _Record:
    on = False


class _Cache:
    def __init__(self, flag, truthy):
        self.has_previous_state = flag
        self.truthy = truthy

    def __bool__(self):
        return self.truthy


def _backbone(past_key_values=None, **kwargs):
    return {"past_key_values": past_key_values}


def _run(cache, **kwargs):
    return _forward(_Record(), _backbone, (), dict(kwargs, past_key_values=cache))


def test_a_falsy_cache_whose_flag_upstream_could_not_set_gets_it():
    cache = _Cache(False, truthy=False)  # 4.54's Cache of empty DynamicLayers
    _run(cache)
    assert cache.has_previous_state is True


def test_a_truthy_cache_is_upstreams():
    cache = _Cache(False, truthy=True)  # upstream's line sets it itself; we must not
    _run(cache)
    assert cache.has_previous_state is False


def test_caches_without_a_bool_flag_are_left_alone():
    class PerLayer:  # 5.x: has_previous_state(layer) is a method
        def has_previous_state(self, layer=None):
            return False

        def __bool__(self):
            return False

    cache = PerLayer()
    _run(cache)
    assert callable(cache.has_previous_state)
    assert _run(None) == {"past_key_values": None}


def test_the_cache_the_forward_returns_is_read_when_none_was_given():
    made = _Cache(False, truthy=False)

    def backbone(past_key_values=None):
        return {"past_key_values": made}

    _forward(_Record(), backbone, (), {})
    assert made.has_previous_state is True
