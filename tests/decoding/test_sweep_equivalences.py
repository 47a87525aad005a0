"""The sweep's equivalence scenarios (``oracles/sweep/equivalences.py``): inputs_embeds ≡ input_ids, and every
cache implementation ≡ use_cache=False ≡ the no-cache forward of the final sequence.

Their oracles must accept what a correct release does (upstream llama, every patch off), say ``unsupported``
where the model or the machine refuses in words, and find the defect hf_genfix patches (XGLM's in-place
positions under ``use_cache=False`` on 5.2).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hf_genfix.oracles import sweep
from hf_genfix.oracles.sweep import equivalences as sweep_equivalences  # noqa: E402

NAMES = ["inputs-embeds", "inputs-embeds-padded", "inputs-embeds-options", "uncached", "cache-implementations"]


def test_the_scenarios_are_registered():
    assert set(NAMES) <= set(sweep.SCENARIOS)


def test_they_pass_on_llama_without_hf_genfix():
    import hf_genfix

    with hf_genfix.disabled():
        out = sweep.run_sweep(archs=["llama"], scenarios=NAMES)
    runs = out["architectures"]["llama"]["scenarios"]
    if runs["cache-implementations"]["verdict"] == "skipped":  # 4.46: every one raises upstream (listed, not run)
        assert "no cache implementation ran" in runs["cache-implementations"]["message"]
        runs = {k: v for k, v in runs.items() if k != "cache-implementations"}
    assert {k: v["verdict"] for k, v in runs.items()} == dict.fromkeys(list(runs), "pass"), runs
    assert set(runs) >= set(NAMES) - {"cache-implementations"}
    options = runs["inputs-embeds-options"]
    assert options["options"].split(", ") == list(sweep_equivalences.OPTIONS)  # a full sweep compares them all
    # The penalties with inputs_embeds alone are judged (inputs-embeds-penalties), not called unsupported: transformers
    # only warns there, and a warning is not a refusal.
    assert "unsupported" not in options and "inputs-embeds-penalties" in sweep.SCENARIOS
    cached = runs.get("cache-implementations")
    if cached is not None:
        refused = [part.split(":")[0] for part in cached["unsupported"].split("; ") if part]
        assert sorted(cached["caches"].split(", ") + refused) == sorted(sweep_equivalences.CACHES)
    assert runs["uncached"]["steps_compared"] == 12


def test_a_quick_sweep_samples_options_and_caches():
    out = sweep.run_sweep(archs=["llama"], scenarios=["inputs-embeds-options", "cache-implementations"], quick=True)
    runs = out["architectures"]["llama"]["scenarios"]
    assert len(runs["inputs-embeds-options"]["options"].split(", ")) == 2
    cached = runs["cache-implementations"]
    if cached["verdict"] == "skipped":  # 4.46: both sampled ones raise upstream too, listed in the message
        assert cached["message"].count(": upstream raises it too") + cached["message"].count("Error") >= 2
        return
    assert len(cached["caches"].split(", ")) + len([p for p in cached["unsupported"].split("; ") if p]) == 2


def test_a_model_whose_generation_inputs_take_no_embeddings_is_unsupported_not_run():
    out = sweep.run_sweep(archs=["openai-gpt"], scenarios=["inputs-embeds"])
    if "openai-gpt" not in out["architectures"]:
        pytest.skip(f"openai-gpt is not built tiny here: {out['not_buildable'].get('openai-gpt')}")
    run = out["architectures"]["openai-gpt"]["scenarios"]["inputs-embeds"]
    assert run["verdict"] == "unsupported" and run.get("not_run")
    assert "inputs_embeds" in run["message"] and not sweep.failed(out)


@pytest.mark.parametrize("exc,refused", [
    (ValueError("Invalid `cache_implementation` (hybrid). Choose one of: ('static', 'offloaded_static')"), True),
    (AssertionError("Torch not compiled with CUDA enabled"), True),
    (ImportError("You need to install optimum-quanto in order to use KV cache quantization"), True),
    (RuntimeError("The size of tensor a (15) must match the size of tensor b (10) at non-singleton dimension 3"),
     False),
    (AttributeError("'StaticLayer' object has no attribute 'max_batch_size'"), False),
    (RuntimeError("CUDA error: device-side assert triggered"), False),
])
def test_a_refusal_in_words_is_told_from_a_crash(exc, refused):
    assert sweep_equivalences._refused(exc) is refused


def test_xglm_uncached_generation_is_judged_by_the_no_cache_forward():
    """On 5.2 (model-xglm-positions) use_cache=False is wrong from the second token without the patch; the
    scenario finds it there and passes with the patch, and passes on every release with hf_genfix."""
    import hf_genfix
    from packaging.version import Version

    subject = sweep.Subject("xglm")
    scenario = sweep.SCENARIOS["uncached"]
    assert sweep.observe(scenario, subject).outcome == "pass"
    with hf_genfix.disabled("model-xglm-positions"):
        without = sweep.observe(scenario, subject)
    if Version(Version(transformers.__version__).base_version) == Version("5.2.0"):
        assert without.outcome == "wrong" and "step 1" in without.message
    else:
        assert without.outcome == "pass"


def test_a_model_whose_forward_changes_given_embeddings_declines_the_embeds_scenarios(monkeypatch):
    """inputs_embeds ≡ input_ids holds only where the forward does nothing more to the ids' embeddings (4.46's
    OpenLlama normalised them only when it looked them up itself)."""
    import torch

    subject = sweep.Subject("llama")
    assert sweep_equivalences._declines_embeds(subject) == ""
    table = subject.model.get_input_embeddings()
    original = subject.model.model.forward

    def forward(*args, input_ids=None, inputs_embeds=None, **kwargs):
        if input_ids is not None:  # the looked-up embeddings get something the given ones do not
            inputs_embeds, input_ids = table(input_ids) * 2.0, None
        return original(*args, input_ids=input_ids, inputs_embeds=inputs_embeds, **kwargs)

    monkeypatch.setattr(subject.model.model, "forward", forward)
    with torch.no_grad():
        assert "otherwise than the ids they embed" in sweep_equivalences._declines_embeds(subject)


def test_an_implementation_upstream_also_crashes_on_is_listed_and_the_others_still_judged(monkeypatch):
    """One implementation that raises alike without hf_genfix (4.46's offloaded_static TypeError) neither fails the
    scenario nor hides another implementation's result."""
    subject = sweep.Subject("llama")
    plain = sweep_equivalences.generate_steps

    def generate_steps(model, ids, mask, **kwargs):
        if kwargs.get("cache_implementation") == "offloaded":
            raise TypeError("OffloadedCache.__init__() got an unexpected keyword argument 'batch_size'")
        return plain(model, ids, mask, **kwargs)

    monkeypatch.setattr(sweep_equivalences, "generate_steps", generate_steps)
    monkeypatch.setattr(sweep_equivalences, "CACHES", ("offloaded", "static"))
    out = sweep_equivalences.cache_implementations(subject)
    assert out["caches"] == "static" and "offloaded: upstream raises it too: TypeError" in out["unsupported"]
