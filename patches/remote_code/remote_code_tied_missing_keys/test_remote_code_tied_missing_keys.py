"""remote-code-tied-missing-keys: on 5.3 a remote-code model with tied weights reloads with its tied parameters
tied, not left on the meta device.

5.3.0's ``mark_tied_weights_as_initialized`` drops a remote model's tied targets from ``missing_keys``, so
``tie_weights`` leaves them as built (meta). With the patch: a 5.x-style remote model (the mapping form) and a
MiniCPM-style one (4.x's list form, mapped by remote-code-tied-weights) reload with the head tied and the saved
model's logits; a model of transformers itself loads exactly as upstream loads it. Without it
(``hf_genfix.disabled``) the head stays on the meta device. Outside the range the patch is not installed and the
tests are skipped.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PATCH = "remote-code-tied-missing-keys"


def _save_and_reload(tmp_path, repo):
    import shutil

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(str(repo), trust_remote_code=True)
    model = AutoModelForCausalLM.from_config(config, trust_remote_code=True).float().eval()
    saved = tmp_path / f"saved-{repo.name}"
    model.save_pretrained(saved)
    for code in repo.glob("*.py"):
        if not (saved / code.name).exists():
            shutil.copy(code, saved)
    return model, AutoModelForCausalLM.from_pretrained(str(saved), trust_remote_code=True).float().eval()


def _logits(model):
    import torch

    with torch.no_grad():
        return model(input_ids=torch.tensor([[5, 17, 33, 9, 61]]), use_cache=False).logits


@pytest.mark.parametrize("kind", ["modern_tied", "minicpm"])
def test_a_tied_remote_model_reloads_tied(require_applied, tmp_path, kind):
    import torch

    from hf_genfix.oracles.legacy_models import write_family
    from hf_genfix.oracles.saving import write_modern_remote_repo

    require_applied(PATCH)
    write = (lambda d: write_modern_remote_repo(d, repo="modern_tied", tie_word_embeddings=True)) \
        if kind == "modern_tied" else (lambda d: write_family("minicpm", d))
    model, again = _save_and_reload(tmp_path, write(tmp_path / kind))
    assert not [n for n, p in again.named_parameters() if p.is_meta]
    assert again.get_output_embeddings().weight is again.get_input_embeddings().weight
    assert torch.equal(_logits(model), _logits(again))
    with hf_genfix.disabled(PATCH):
        _, upstream = _save_and_reload(tmp_path / "off", write(tmp_path / f"{kind}-off"))
    assert [n for n, p in upstream.named_parameters() if p.is_meta]  # the test can fail: upstream leaves it


def test_a_model_of_transformers_loads_as_upstream_does(require_applied, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    require_applied(PATCH)
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(tmp_path)
    with hf_genfix.recording() as record:
        ours = AutoModelForCausalLM.from_pretrained(tmp_path)
    assert not record.counts.get(PATCH, (0, 0))[1]
    with hf_genfix.disabled(PATCH):
        upstream = AutoModelForCausalLM.from_pretrained(tmp_path)
    assert ours.lm_head.weight is ours.model.embed_tokens.weight
    assert all(torch.equal(a, b) for a, b in zip(ours.state_dict().values(), upstream.state_dict().values()))


class TestPatch(PatchTests):
    """``remote-code-tied-missing-keys``: its probe proves it on this release; its plain program gets it
    installed."""
