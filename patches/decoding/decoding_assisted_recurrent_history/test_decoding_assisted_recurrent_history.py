"""``decoding-assisted-recurrent-history``: the checks every patch owes (hf_genfix.testing.patches.PatchTests)."""

from hf_genfix.testing.patches import PatchTests


class TestPatch(PatchTests):
    """``decoding-assisted-recurrent-history``: its probe proves it on this release; its plain program gets it
    installed."""


def _fix():
    from hf_genfix.catalog import fix, manifest

    return fix(manifest("decoding-assisted-recurrent-history"))


def _window(keep, layer, layer_idx=0):
    from types import SimpleNamespace

    cache = SimpleNamespace(layers=[layer])
    return _fix()._window(lambda *a, **k: keep, cache, (layer_idx,) if layer_idx is not None else (), {})


def test_the_window_covers_the_drafts_then_every_token():
    """Recording with a draft length of 5: one more for the prompt's forward, every token once the layer holds a
    state; not recording (0), the question for every layer (None) and a layer without flags stay upstream's."""
    from types import SimpleNamespace

    empty = SimpleNamespace(has_previous_state={0: False}, is_recurrent_states_initialized={0: False})
    filled = SimpleNamespace(has_previous_state={0: True}, is_recurrent_states_initialized={0: False})
    recurrent_only = SimpleNamespace(has_previous_state={0: False}, is_recurrent_states_initialized={0: True})
    assert _window(5, empty) == 6
    assert _window(5, filled) == _window(5, recurrent_only) == _fix().EVERY_TOKEN
    assert _window(0, filled) == 0
    assert _window(5, filled, layer_idx=None) == 5
    assert _window(5, SimpleNamespace()) == 6
