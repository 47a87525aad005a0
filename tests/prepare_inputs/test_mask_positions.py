"""prepare-inputs-mask-positions-ctrl / -openai-gpt / -roc-bert / -xlm-roberta-xl: a left-padded batch gets the
mask and its positions, on the installed release.

Where a patch applies: its probe (a left-padded batch against each row alone) passes, and fails with the patch
switched off; an unpadded batch is bitwise upstream's (the patch adds nothing where there is no pad).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.catalog import probe  # noqa: E402
from hf_genfix.oracles import DefectObserved  # noqa: E402
from hf_genfix.oracles.sweep import build  # noqa: E402
from hf_genfix.testing.patches import assert_upstream_bitwise  # noqa: E402

# each patch's model and the config switches it is built with (RoCBert generates as a decoder)
MODELS = {"prepare-inputs-mask-positions-ctrl": ("ctrl", {}),
          "prepare-inputs-mask-positions-openai-gpt": ("openai-gpt", {}),
          "prepare-inputs-mask-positions-roc-bert": ("roc_bert", {"is_decoder": True}),
          "prepare-inputs-mask-positions-xlm-roberta-xl": ("xlm-roberta-xl", {"is_decoder": True})}


@pytest.mark.parametrize("pid", sorted(MODELS))
def test_a_left_padded_batch_is_each_row_alone(require_applied, pid):
    require_applied(pid)
    assert probe(pid)()["max_logit_diff"] < 1e-4
    with hf_genfix.disabled(pid), pytest.raises(DefectObserved):
        probe(pid)()


@pytest.mark.parametrize("pid", sorted(MODELS))
def test_a_batch_without_a_pad_is_upstreams(require_applied, pid):
    import torch

    require_applied(pid)
    model_type, switches = MODELS[pid]
    model = build(model_type, seed=0, **switches)
    ids = torch.tensor([[17, 44, 91, 23, 5, 60, 8, 71], [3, 9, 27, 81, 4, 16, 64, 25]])
    assert_upstream_bitwise(model, pid, ids, max_new_tokens=4, attention_mask=torch.ones_like(ids))
