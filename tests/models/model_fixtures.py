"""Fixtures the model-family tests import: the patches decided (their target modules imported) before each test,
``tiny`` (a tiny model or a skip) and ``assert_upstream_bitwise`` (generate() with a patch and without: bit for bit)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def patches_decided():
    pytest.importorskip("transformers")
    from hf_genfix.doctor import import_targets

    import_targets()


@pytest.fixture(scope="session")
def tiny():
    """``tiny(model_type, **overrides)``: the tiny model, or the test skipped where this release cannot build it."""
    from hf_genfix.oracles import ProbeSkipped, tiny_model

    def build(model_type: str, **overrides):
        try:
            return tiny_model(model_type, **overrides)
        except ProbeSkipped as exc:
            pytest.skip(str(exc))

    return build


def assert_upstream_bitwise(model, patch: str, ids, **generate):
    """Greedy ``generate()`` with ``patch`` and inside ``hf_genfix.disabled(patch)``: the same sequences and the same
    per-step logits, bit for bit (never worse than upstream where upstream is right)."""
    import torch

    import hf_genfix

    kwargs = dict(max_new_tokens=5, do_sample=False, pad_token_id=0, eos_token_id=None,
                  return_dict_in_generate=True, output_logits=True)
    kwargs.update(generate)
    with torch.no_grad():
        patched = model.generate(ids, **kwargs)
        with hf_genfix.disabled(patch):
            upstream = model.generate(ids, **kwargs)
    assert torch.equal(patched.sequences, upstream.sequences)
    assert all(torch.equal(a, b) for a, b in zip(patched.logits, upstream.logits))

