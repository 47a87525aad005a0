"""Issue 4, oracles (3) and (4): greedy decoding by hand through ``model.prepare_inputs_for_generation``.

Each step passes only the whole sequence so far, the cache the last forward returned and the attention mask
(grown by the caller, or never grown), and every step's logits must equal a no-cache forward over the unpadded
row. Runs with the patches as this release's catalog installs them: a release outside a patch's range must be
correct without it.
"""

from __future__ import annotations

import pytest

from prepare_inputs_models import ARCHITECTURES, model_of, skip_known_limit

pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.mark.parametrize("grow_mask", [True, False], ids=["mask-grown", "mask-never-grown"])
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_manual_loop_matches_reference(arch, grow_mask):
    from hf_genfix.oracles.decode import check_manual_loop

    model = model_of(arch)
    skip_known_limit(arch)
    figures = check_manual_loop(model, grow_mask=grow_mask)
    assert figures["steps_compared"] > 0


@pytest.mark.parametrize("arch", ["gpt2", "llama", "bloom", "phi3"])
# A loop written before 5.24 (past_key_values=) meets 5.24's FutureWarning, as it does without hf_genfix.
@pytest.mark.filterwarnings("ignore:`past_key_values` is deprecated:FutureWarning")
@pytest.mark.parametrize("cache_key", ["past_key_values", "cache"])
def test_cache_under_either_keyword(arch, cache_key):
    # A loop written for 5.24 (cache=) on an older release, and one written before 5.24 on 5.24.
    from hf_genfix.oracles.decode import check_manual_loop

    check_manual_loop(model_of(arch), grow_mask=True, cache_key=cache_key)


@pytest.mark.parametrize("grow_mask", [True, False], ids=["mask-grown", "mask-never-grown"])
@pytest.mark.parametrize("arch", ["gpt2", "gpt_neo", "llama", "bloom", "phi3"])
def test_classic_loop_feeding_only_the_new_token(arch, grow_mask):
    from hf_genfix.oracles.decode import check_manual_loop

    check_manual_loop(model_of(arch), grow_mask=grow_mask, feed="new")


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_cache_given_positionally_in_the_4x_order(arch):
    # prepare_inputs_for_generation(ids, cache): on 5.3+ the second parameter is next_sequence_length.
    import torch

    from hf_genfix.helpers.decode import cache_from_outputs
    from hf_genfix.oracles import assert_close, left_pad, reference_logits
    from hf_genfix.oracles.decode import DEFAULT_ROWS

    model = model_of(arch)
    ids, mask = left_pad(DEFAULT_ROWS)
    with torch.no_grad():
        out = model(**model.prepare_inputs_for_generation(ids, None, attention_mask=mask))
        ids = torch.cat([ids, out.logits[:, -1:].argmax(-1)], -1)
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], -1)
        step = model(**model.prepare_inputs_for_generation(ids, cache_from_outputs(out), attention_mask=mask))
    for row, prompt in enumerate(DEFAULT_ROWS):
        expected = reference_logits(model, list(prompt) + [int(ids[row, -1])])[-1]
        assert_close(step.logits[row, -1], expected, f"{arch} row {row}")

