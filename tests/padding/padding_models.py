"""Tiny models shared by the padding tests (built once per session; float32, eval mode).

Not a conftest.py: a second module named ``conftest`` would shadow tests/conftest.py for ``from conftest import``.
Test modules import ``model_of`` and the autouse fixture ``patches_decided`` from here.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

_models: dict = {}


def model_of(arch: str, **overrides):
    """The tiny ``arch`` model (oracles.tiny), cached; ``ProbeSkipped`` becomes a skip with its reason."""
    from hf_genfix.oracles import ProbeSkipped, tiny_model

    key = (arch, tuple(sorted(overrides.items())))
    if key not in _models:
        try:
            _models[key] = tiny_model(arch, **overrides)
        except ProbeSkipped as exc:
            pytest.skip(str(exc))
    return _models[key]


@pytest.fixture(autouse=True)
def patches_decided():
    # Import every target module, so each patch is decided (applied / not-needed) before a test runs.
    from hf_genfix.doctor import import_targets

    import_targets()
