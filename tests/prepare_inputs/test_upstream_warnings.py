"""Upstream's own deprecation warnings still reach the user through a patched call (issue 23, section 5).

5.24 deprecates ``prepare_inputs_for_generation(past_key_values=)`` (FutureWarning: removed in 5.40). The
prepare-inputs patch renamed the keyword to ``cache`` before calling upstream, so the warning never showed, even
under ``-W always``. The same call with and without hf_genfix must emit the same warnings.
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


def _warnings_of(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
        except TypeError:  # 4.x without cache_position: upstream's defect; what it warned before still counts
            pass
    return sorted({(w.category.__name__, str(w.message)) for w in caught
                   if issubclass(w.category, (FutureWarning, DeprecationWarning))})


@pytest.mark.parametrize("model_type", ["llama", "gpt2"])
def test_past_key_values_keyword_warns_as_upstream(model_type):
    import hf_genfix
    from hf_genfix.oracles import tiny_model

    model = tiny_model(model_type)
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        cache = model(ids, use_cache=True).past_key_values

    def call():
        model.prepare_inputs_for_generation(torch.tensor([[5, 6, 7, 8, 9]]), past_key_values=cache,
                                            attention_mask=torch.ones(1, 5, dtype=torch.long))

    with hf_genfix.disabled():
        upstream = _warnings_of(call)
    assert _warnings_of(call) == upstream
