"""``hf-genfix doctor --sweep``: which architectures it covers, and how a failure is attributed.

The attribution is tested with fake scenarios against the fixture registry (doctor_fixture.py): a failure that
only a patch causes, one that a not-installed patch explains, one nothing explains, a crash, "not supported", a
scenario a manifest claims; "unsupported" is decided from real tiny models (RWKV ignores the mask, TrOCR's
decoder takes no position ids).
"""

from __future__ import annotations

import importlib
import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from doctor_fixture import PKG, make_registry, manifest  # noqa: E402,F401 - make_registry is a fixture
from hf_genfix._config import Config  # noqa: E402
from hf_genfix._manifest import load_dir  # noqa: E402
from hf_genfix._registry import Registry  # noqa: E402
from hf_genfix.oracles import DefectObserved, sweep  # noqa: E402


@pytest.mark.parametrize("model_type, switches", [("cpmant", {}), ("whisper", {}), ("roc_bert", {"is_decoder": True}),
                                                   ("xmod", {"is_decoder": True, "default_language": "en_XX"}),
                                                   ("glm", {}), ("inkling2_loop_text", {}), ("apertus", {})])
def test_types_whose_defaults_outgrow_a_tiny_model_are_built_tiny(model_type, switches):
    """Each was "not built tiny" until session 39 (CPM-Ant's prompt table, Whisper's heads per stack, RoCBert's
    pronunciation and shape embeddings, X-MOD's default language) or 40 (4.46's GLM head size, Inkling-2-Loop's
    loop and experts, Apertus on 4.56-4.57: an init the meta device cannot run, so its size is counted on the CPU):
    built now, within the sweep's size and able to run a forward."""
    import torch

    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep.core import MAX_PARAMS, build

    try:
        model = build(model_type, seed=0, **switches)
    except ProbeSkipped as exc:
        if "not in this transformers release" in str(exc):
            pytest.skip(str(exc))
        raise
    assert sum(p.numel() for p in model.parameters()) <= MAX_PARAMS
    with torch.no_grad():
        assert model(torch.tensor([[5, 6, 7, 8]])).logits.shape[:2] == (1, 4)


def test_a_causal_lm_that_asks_for_is_decoder_is_swept_as_a_bert_decoder():
    """BertGeneration's causal-LM class asks for ``is_decoder=True`` (a warning, read from its code) and has no
    masked-LM head: until session 40 it fell to the decoder-only kind, which skips what its default config leaves
    bidirectional, and was never swept (the first sweep found model-bert-generation-cached-mask). TrOCR's class sets
    the switch itself and stays decoder-only; BART's is the encoder-decoder kind's."""
    kinds = sweep.kinds_of(["bert-generation", "bert", "llama", "trocr", "bart"])
    assert kinds == {"bert-generation": "bert-decoder", "bert": "bert-decoder", "llama": "decoder-only",
                     "trocr": "decoder-only", "bart": "encoder-decoder"}


def test_a_mask_dropped_only_with_a_cache_is_no_contract():
    """The "ignores the mask" check reads a forward without a cache: BertGeneration before 4.47 drops the mask only
    in its cached path (a defect, model-bert-generation-cached-mask), and its left-padded scenario was excused as
    "the model ignores attention_mask" by a check that ran the default, cached, forward. RWKV ignores it in both."""
    import hf_genfix
    from hf_genfix.oracles.sweep.bert_decoders import BertDecoderSubject

    with hf_genfix.disabled("model-bert-generation-cached-mask"):  # upstream's forward (fails without on 4.46)
        assert not BertDecoderSubject("bert-generation").ignores_mask
    assert sweep.Subject("rwkv").ignores_mask


def test_a_model_numbered_from_padding_idx_takes_padding():
    """RoBERTa numbers its positions from padding_idx + 1: given positions so numbered, a left-padded forward is the
    unpadded row's, so the sweep must not excuse a padded scenario of it as "cannot take padding" (positions from 0
    alone said so until session 39); BERT (from 0) takes padding as before."""
    from hf_genfix.oracles.sweep.bert_decoders import BertDecoderSubject

    assert BertDecoderSubject("roberta").padding_problem() == ""
    assert BertDecoderSubject("bert").padding_problem() == ""


def test_decoder_only_types():
    types = sweep.decoder_only_types()
    assert {"llama", "gpt2", "mistral", "qwen2"} <= set(types)
    assert not {"bert", "bart", "t5", "roberta"} & set(types)


def test_real_oracles_pass_on_llama(make_registry):
    out = sweep.run_sweep(make_registry("fixed-here"), archs=["llama"], scenarios=["cached", "left-padded"])
    runs = out["architectures"]["llama"]["scenarios"]
    assert {k: v["outcome"] for k, v in runs.items()} == {"cached": "pass", "left-padded": "pass"}
    assert runs["left-padded"]["steps_compared"] > 0 and runs["left-padded"]["max_logit_diff"] < 1e-4
    assert not sweep.failed(out)


def _thing():
    from genfix_doctor_fixture.target import Thing  # the fixture package exists once make_registry ran

    return Thing()


def only_when_patched(subject):
    if _thing().answer() != 41:  # the fixture patch changes the answer: a "regression" hf_genfix causes
        raise DefectObserved("regressed", step=2, max_logit_diff=3.0)
    return {}


def unless_forced(subject):
    if _thing().other() != 42:
        raise DefectObserved("other is wrong", step=1, max_logit_diff=0.5)
    return {}


def always_wrong(subject):
    raise DefectObserved("logits differ", step=3, row=1, max_logit_diff=0.25)


def crashes(subject):
    return {}["boom"]


def unsupported(subject):
    raise ValueError("this model does not support the static cache")


@pytest.fixture
def fake_scenarios(monkeypatch):
    for func in (only_when_patched, unless_forced, always_wrong, crashes, unsupported):
        monkeypatch.setitem(sweep.SCENARIOS, func.__name__, func)


def test_failures_are_attributed(make_registry, fake_scenarios):
    registry = make_registry("fixed-here", "unaffected-but-defect")
    names = ["only_when_patched", "unless_forced", "always_wrong", "crashes", "unsupported"]
    out = sweep.run_sweep(registry, archs=["llama", "not-a-model-type"], scenarios=names)
    assert set(out["not_buildable"]) == {"not-a-model-type"}
    per = out["architectures"]["llama"]["scenarios"]
    outcomes = {k: v["outcome"] for k, v in per.items()}
    assert outcomes == {"only_when_patched": "defect", "unless_forced": "defect", "always_wrong": "defect",
                        "crashes": "crash", "unsupported": "unsupported"}
    verdicts = {k: v["verdict"] for k, v in per.items()}
    # crashes: the same KeyError with every patch off, a loud upstream error (listed, not a new defect)
    assert verdicts == {"only_when_patched": "worse", "unless_forced": "catalog-wrong", "always_wrong": "unknown",
                        "crashes": "upstream-error", "unsupported": "unsupported"}
    unknown = {f["scenario"]: f for f in out["unknown"]}
    assert set(unknown) == {"only_when_patched", "always_wrong"}
    assert unknown["only_when_patched"]["cause"].startswith("hf_genfix: upstream passes with every patch off")
    assert (unknown["always_wrong"]["arch"], unknown["always_wrong"]["step"],
            unknown["always_wrong"]["max_logit_diff"]) == ("llama", 3, 0.25)
    (known,) = out["known"]
    assert known["explained_by"] == "unaffected-but-defect" and known["catalog_wrong"] is True
    assert known["summary"] == "fixture unaffected-but-defect"
    loud, refused = sorted(out["unsupported"], key=lambda f: f["scenario"])
    assert refused["scenario"] == "unsupported" and "does not support the static cache" in refused["cause"]
    assert loud["kind"] == "crash" and "KeyError" in loud["message"] and "upstream raises it too" in loud["cause"]
    assert sweep.failed(out)
    text = sweep.render_text(out)
    assert "UNKNOWN DEFECT: llama / always_wrong (defect, step 3, max |logit diff| vs the oracle 0.25)" in text
    assert "WORSE THAN UPSTREAM: llama / only_when_patched" in text
    assert "unknown = a defect no manifest explains" in text and "max |logit| difference against the oracle" in text
    # The registry is as it was: the fixture patch installed, the other one not.
    assert {s.id: s.state for s in registry.status()} == {"fixed-here": "applied",
                                                         "unaffected-but-defect": "not-needed"}


def test_the_search_forces_only_the_patches_that_could_change_the_models_calls(make_registry, fake_scenarios,
                                                                               monkeypatch):
    """``explain``'s search forces a patch that is not installed only where it could act on the model (its targets
    are not all another model's, remote code's or a tokenizer's): told that none can, unless_forced is not explained
    (unknown, where forcing unaffected-but-defect would find it: test_failures_are_attributed)."""
    from hf_genfix.oracles.sweep import core

    asked = []

    def nothing_can(targets, family, modules, tokenizer=False):
        asked.append(modules)
        return "its targets are another model's"

    monkeypatch.setattr(core, "cannot_act", nothing_can)
    registry = make_registry("fixed-here", "unaffected-but-defect")
    out = sweep.run_sweep(registry, archs=["llama"], scenarios=["unless_forced"])
    assert out["architectures"]["llama"]["scenarios"]["unless_forced"]["verdict"] == "unknown"
    assert asked and all("transformers.models.llama.modeling_llama" in modules for modules in asked)


def wrong_otherwise(subject):
    if _thing().answer() == 41:  # upstream raises; with the fixture patch the answer is silently wrong instead
        raise TypeError("upstream refuses")
    raise DefectObserved("patched: wrong", step=1, max_logit_diff=0.5)


def test_worse_and_unknown_counts_are_the_lines(make_registry, fake_scenarios, monkeypatch):
    """Every scenario the differential counts worse is listed as worse, one line each (also where both sides fail,
    differently), and the summary's counts are the number of lines, in the text and in the JSON."""
    monkeypatch.setitem(sweep.SCENARIOS, "wrong_otherwise", wrong_otherwise)
    registry = make_registry("fixed-here", "unaffected-but-defect")
    names = ["only_when_patched", "unless_forced", "always_wrong", "crashes", "wrong_otherwise"]
    out = sweep.run_sweep(registry, archs=["llama"], scenarios=names, differential_all=True)
    text = sweep.render_text(out)
    worse = [line for line in text.splitlines() if line.startswith("  WORSE THAN UPSTREAM: ")]
    unknown = [line for line in text.splitlines() if line.startswith("  UNKNOWN DEFECT: ")]
    assert f"{len(unknown)} unknown defect(s), {len(worse)} worse than upstream" in text
    assert out["differential"]["counts"]["worse"] == len(worse) == 2
    assert sum(f["verdict"] == "worse" for f in out["unknown"]) == len(worse)
    assert out["counts"]["worse"] == len(worse) and out["counts"]["unknown"] == len(unknown) == 1
    loud = [line for line in text.splitlines() if line.startswith("  upstream-error: ")]
    assert out["counts"]["upstream_error"] == len(loud) == 1 and f"{len(loud)} loud upstream error(s)" in text
    (line,) = [w for w in worse if "wrong_otherwise" in w]
    assert "upstream raises TypeError" in line and "step 1" in line


class _Rounded:
    """A stand-in model whose output moves by ``step`` when the fixture patch is installed."""

    step = 1e-7

    def generate(self):
        import torch

        return torch.tensor([1.0 + (self.step if _thing().answer() == 42 else 0.0)])


def rounded(subject):
    subject.model.generate()
    return {}


@pytest.mark.parametrize("step, documented, verdict", [(1e-7, True, "rounding"), (1e-7, False, "worse"),
                                                       (1e-3, True, "worse")])
def test_rounding_needs_a_documented_patch_and_a_float_rounding_difference(make_registry, monkeypatch, step,
                                                                            documented, verdict):
    """Both pass, outputs differ: ``rounding`` only where turning off one installed patch whose fix module says why
    it cannot be bitwise (NOT_BITWISE) gives upstream's outputs bitwise, and the difference is float rounding."""
    import importlib
    from types import SimpleNamespace

    from hf_genfix.oracles import differential

    registry = make_registry("fixed-here")
    _thing()  # the target first: its import installs the fix (from the fixes module)
    if documented:
        monkeypatch.setattr(importlib.import_module("genfix_doctor_fixture.fixes"), "NOT_BITWISE", "fixture reason",
                            raising=False)
    monkeypatch.setattr(_Rounded, "step", step)
    subject = SimpleNamespace(model=_Rounded())
    pair = differential.differential(registry, rounded, subject, (subject.model,))
    assert pair["verdict"] == "worse"
    got = sweep.core._rounding(registry, rounded, subject, pair)
    assert (got[0] if got else "worse") == verdict
    if got:
        assert "fixed-here off" in got[1] and "fixture reason" in got[1]


def rounded_nearer(subject):
    subject.model.generate()
    return {"max_logit_diff": subject.ours if _thing().answer() == 42 else 5e-5}


@pytest.mark.parametrize("ours, verdict", [(1e-6, "rounding"), (6e-5, "worse")])
def test_a_documented_patch_may_move_past_rounding_towards_the_oracle(make_registry, monkeypatch, ours, verdict):
    """A move above ROUNDING_LIMIT is ``rounding`` only where hf_genfix ends nearer the oracle than upstream (upstream
    5e-5 off, the move 3e-5): a documented patch that replaces a path's float error with a smaller one."""
    import importlib
    from types import SimpleNamespace

    from hf_genfix.oracles import differential

    registry = make_registry("fixed-here")
    _thing()
    monkeypatch.setattr(importlib.import_module("genfix_doctor_fixture.fixes"), "NOT_BITWISE", "fixture reason",
                        raising=False)
    monkeypatch.setattr(_Rounded, "step", 3e-5)
    subject = SimpleNamespace(model=_Rounded(), ours=ours)
    pair = differential.differential(registry, rounded_nearer, subject, (subject.model,))
    got = sweep.core._rounding(registry, rounded_nearer, subject, pair)
    assert (got[0] if got else "worse") == verdict


def later_stage_crashes(subject):
    from hf_genfix.oracles.outcome import earlier_stage

    with earlier_stage():
        if _thing().answer() != 42:  # upstream's first stage is wrong (41); the fixture patch makes it right
            raise DefectObserved("first stage wrong", step=1, max_logit_diff=0.3)
    return {}["second stage"]  # and the second stage raises, with or without the patch


def later_stage_crashes_when_patched(subject):
    from hf_genfix.oracles.outcome import earlier_stage

    with earlier_stage():
        if _thing().answer() != 42:
            raise DefectObserved("first stage wrong", step=1, max_logit_diff=0.3)
    if _thing().answer() == 42:
        return {}["second stage"]  # only with the patch: not upstream's exception
    return {}


def test_a_crash_past_upstreams_wrong_earlier_stage_is_loud_only_if_upstream_raises_it_there(make_registry,
                                                                                              monkeypatch):
    """Upstream is wrong at a first stage and stops there; hf_genfix gets that stage right and crashes in the next
    one. The crash is upstream's own (a loud upstream error) only where upstream, run on past its wrong stage,
    raises the same; otherwise it stays unknown (5.3-5.12 Gemma-3 and Gemma-4's second image turn)."""
    for func in (later_stage_crashes, later_stage_crashes_when_patched):
        monkeypatch.setitem(sweep.SCENARIOS, func.__name__, func)
    registry = make_registry("fixed-here")
    out = sweep.run_sweep(registry, archs=["llama"], scenarios=["later_stage_crashes",
                                                                "later_stage_crashes_when_patched"],
                          differential_all=True)
    per = out["architectures"]["llama"]["scenarios"]
    assert per["later_stage_crashes"]["verdict"] == "upstream-error"
    assert "once past its own wrong earlier stage (first stage wrong)" in per["later_stage_crashes"]["cause"]
    assert per["later_stage_crashes_when_patched"]["verdict"] == "unknown"
    assert out["differential"]["counts"]["refused"] == 2 and out["differential"]["counts"]["worse"] == 0


def test_budget_stops_starting_architectures(make_registry):
    out = sweep.run_sweep(make_registry("fixed-here"), archs=["llama", "gpt2"], scenarios=["cached"], budget_s=0)
    assert out["not_reached"] == ["llama", "gpt2"] and out["architectures"] == {}


def test_quick_builds_a_fixed_sample_and_pick_samples_only_then(make_registry, monkeypatch):
    built: list[str] = []

    def fake(model_type):
        if model_type in ("t00", "t06"):  # not buildable: the quick sample takes the next ones instead
            raise sweep.ProbeSkipped("no tiny config")
        built.append(model_type)
        raise sweep.ProbeSkipped("built; nothing to run")  # counted as not built: the next type is tried

    monkeypatch.setattr(sweep.core, "KINDS", {"decoder-only": (lambda: [f"t{i:02d}" for i in range(30)], fake, 4)})
    out = sweep.run_sweep(make_registry("fixed-here"), scenarios=["cached"], quick=True)
    # every third type first (t00, t03, t06, ...), unbuildable ones replaced by the next
    assert built[:4] == ["t03", "t09", "t12", "t15"] and out["quick"] is True
    assert sweep.pick(range(10), 3) == list(range(10))  # outside a quick run every combination is kept
    built.clear()
    sweep.run_sweep(make_registry("fixed-here"), scenarios=["cached"])
    assert len(built) == 28


def test_an_architecture_where_everything_crashes_alike_is_unusable_not_a_defect(make_registry, monkeypatch):
    for name in ("first", "second", "third"):
        monkeypatch.setitem(sweep.SCENARIOS, name, crashes)
    out = sweep.run_sweep(make_registry("fixed-here"), archs=["llama"], scenarios=["first", "second"])
    # two alike are two findings (`--scenario A --scenario B` runs only two): loud, upstream raises the same
    assert [f["verdict"] for f in out["unsupported"]] == ["upstream-error"] * 2, (out["unknown"], out["known"])
    out = sweep.run_sweep(make_registry("fixed-here"), archs=["llama"], scenarios=["first", "second", "third"])
    assert out["unknown"] == [] and out["unusable"]["llama"].startswith("KeyError: 'boom'")
    assert "unusable tiny: llama" in sweep.render_text(out)
    assert {o["verdict"] for o in out["architectures"]["llama"]["scenarios"].values()} == {"unusable"}


def _claiming_registry(tmp_path, claims):
    """The fixture's "unaffected-but-defect" patch, affected everywhere and claiming ``claims``; switched off."""
    mdir = tmp_path / "claims"
    mdir.mkdir()
    text = manifest("claimer", ">=0", "install_other", "probe_other")
    text = text.replace("[evidence]", f"sweep = {claims!r}\n[evidence]".replace("'", '"'))
    (mdir / "claimer.toml").write_text(text)
    registry = Registry(load_dir(mdir), Config(toggles={"claimer": "off"}))
    registry.activate()
    return registry


@pytest.mark.parametrize("claims, verdict", [(["always_wrong"], "known"), (["beam", "always_wrong/ll*"], "known"),
                                             (["always_wrong/gpt2"], "unknown"), (["beam"], "unknown")])
def test_a_manifest_claims_scenarios(make_registry, fake_scenarios, tmp_path, claims, verdict):
    make_registry()  # writes the fixture package
    registry = _claiming_registry(tmp_path, claims)
    try:
        out = sweep.run_sweep(registry, archs=["llama"], scenarios=["always_wrong"])
    finally:
        registry.revert()
    finding = (out["known"] + out["unknown"])[0]
    assert finding["verdict"] == verdict
    if verdict == "known":
        assert finding["explained_by"] == "claimer" and "patch disabled here" in finding["cause"]
        assert not sweep.failed(out)


@pytest.mark.parametrize("claims, verdict", [(["always_wrong/ll*"], "known"), (["always_wrong"], "unknown")])
def test_an_installed_patch_that_leaves_a_wrong_answer_explains_it_only_where_its_claim_names_the_model(
        make_registry, fake_scenarios, tmp_path, claims, verdict):
    """Installed, and the answer stays upstream's silently wrong one: a claim for every model type says where the
    patch's defect shows, not that every wrong answer there is it (Speech2Text2's prompt lookup on 4.46-4.50 read
    "known: decoding-prompt-lookup-length", which does not touch it)."""
    make_registry()
    registry = _claiming_registry(tmp_path, claims)
    registry.revert()
    registry = Registry(registry.manifests(), Config(toggles={}))
    registry.activate()
    importlib.import_module(f"{PKG}.target")  # its target imported: installed (it touches no generate() call)
    try:
        out = sweep.run_sweep(registry, archs=["llama"], scenarios=["always_wrong"])
    finally:
        registry.revert()
    finding = (out["known"] + out["unknown"])[0]
    assert finding["verdict"] == verdict, finding["cause"]
    assert sweep.failed(out) == (verdict == "unknown")


@pytest.mark.parametrize("claims", [["crashes"], ["crashes/ll*"]])
def test_a_crash_an_installed_claimer_leaves_as_upstream_is_a_loud_upstream_error_naming_the_claim(
        make_registry, fake_scenarios, tmp_path, claims):
    """The same exception with every patch off, and the installed patch that claims the scenario leaves it: the user
    gets upstream's exception (5.2.0's GLM-MoE-DSA prompt lookup, a shape error, had read "known:
    decoding-prompt-lookup-length")."""
    make_registry()
    registry = _claiming_registry(tmp_path, claims)
    registry.revert()
    registry = Registry(registry.manifests(), Config(toggles={}))
    registry.activate()
    importlib.import_module(f"{PKG}.target")  # installed
    try:
        out = sweep.run_sweep(registry, archs=["llama"], scenarios=["crashes"])
    finally:
        registry.revert()
    assert out["known"] == [] and out["unknown"] == []
    (loud,) = out["unsupported"]
    assert loud["verdict"] == "upstream-error" and loud["explained_by"] is None
    assert "KeyError" in loud["cause"] and "claimer claims this scenario" in loud["cause"]
    assert sweep.counts_of(out)["upstream_error"] == 1 and not sweep.failed(out)


def test_a_model_that_finds_its_pads_by_value_never_generates_the_pad_in_the_same_as_greedy_scenarios():
    """Speech2Text2 (fairseq positions, pads found by value) generates the padding id at step 2 of prompt-lookup's
    row under the calibrated weights, and the reference then skips that token as a pad by definition: 0.0214 at
    step 4, which a claim for every model type had called known. The pad is suppressed on both sides now."""
    from hf_genfix.testing.patches import sweep_subject

    subject = sweep_subject("speech_to_text_2")
    assert sweep.SCENARIOS["prompt-lookup"](subject)["max_logit_diff"] < 1e-4


def test_claimed_scenarios_exist():
    from pathlib import Path

    for m in load_dir(Path(__file__).resolve().parents[2] / "patches"):
        for claim in m.sweep:
            assert claim.partition("/")[0] in sweep.SCENARIOS, (m.id, claim)


def test_unsupported_is_read_from_the_model(make_registry):
    lines = []
    out = sweep.run_sweep(make_registry("fixed-here"), archs=["rwkv", "trocr"],
                          scenarios=["left-padded", "manual-loop"], progress=lines.append)
    why = {(f["arch"], f["scenario"]): f["cause"] for f in out["unsupported"]}
    assert "ignores attention_mask" in why["rwkv", "left-padded"]
    assert "no position_ids" in why["trocr", "left-padded"]
    assert out["architectures"]["rwkv"]["scenarios"]["manual-loop"]["verdict"] == "unsupported"  # no KV cache
    assert out["unknown"] == [] and not sweep.failed(out)
    assert lines[0].startswith("[1/2] rwkv: 2 scenarios in ") and "elapsed" in lines[1]


def test_new_scenarios_pass_on_llama_without_hf_genfix(make_registry):
    """The added scenarios' oracles accept what a correct release does (upstream llama, every patch off), so a
    failure they report means something. (Multi-turn's first turn is right-padded: upstream's known defect.)"""
    import hf_genfix
    import transformers
    from packaging.version import Version

    names = ["unpadded-batch", "assisted-4-tokens", "chunk-after-cache", "left-padded-chunked-prefill",
             "left-padded-cache-implementations"]
    with hf_genfix.disabled():
        out = sweep.run_sweep(make_registry("fixed-here"), archs=["llama"], scenarios=names)
    verdicts = {k: v["verdict"] for k, v in out["architectures"]["llama"]["scenarios"].items()}
    release = Version(Version(transformers.__version__).base_version)
    if release < Version("4.51"):  # no prefill_chunk_size yet
        assert verdicts.pop("left-padded-chunked-prefill") == "skipped"
    elif release < Version("5.3"):  # huggingface/transformers#43082: chunk positions ignore the padding
        # (5.0.0 refuses it in words: "Cannot use prefill chunking without a cache", sliding-window-prefill-chunks')
        assert verdicts.pop("left-padded-chunked-prefill") in ("unknown", "known", "unsupported")
    if Version("5.15") <= release < Version("5.16"):  # the drafter's cache is cropped wrong (drafting-cache-crop)
        # wrong tokens, or the crash it leads to ("upstream-error": this test registry has no patch to name)
        assert verdicts.pop("assisted-4-tokens") in ("unknown", "known", "upstream-error")
    assert set(verdicts.values()) == {"pass"}, verdicts


def test_assistant_drafting_runs_on_gemma4_targets_only(make_registry):
    """Drafting by a tiny Gemma-4 assistant: upstream (every patch off) passes where the release is right, fails
    loudly on 5.18-5.19 (drafting-mtp-init, the catalog's), and is skipped with the reason where the release has
    no assistant (before 5.12), cannot build one (5.23) or the target is not Gemma-4."""
    import hf_genfix
    import transformers
    from packaging.version import Version

    with hf_genfix.disabled():
        out = sweep.run_sweep(make_registry("fixed-here"), archs=["gemma4_text", "gemma3n_text", "llama"],
                              scenarios=["assistant-drafting"])
    got = {a: v["scenarios"]["assistant-drafting"] for a, v in out["architectures"].items()}
    for other in ("gemma3n_text", "llama"):
        if other in got:
            assert got[other]["verdict"] == "skipped" and "only Gemma-4" in got[other]["message"], got[other]
    if "gemma4_text" not in got:
        pytest.skip("this release has no Gemma-4 text model")
    release = Version(Version(transformers.__version__).base_version)
    gemma4 = got["gemma4_text"]
    if gemma4["verdict"] == "skipped":
        assert "assistant" in gemma4["message"] and (release < Version("5.12") or release == Version("5.23.0"))
    elif Version("5.18") <= release < Version("5.20"):
        # A crash inside transformers: "upstream-error" with this test registry (no drafting-mtp-init to name).
        assert gemma4["verdict"] in ("unknown", "known", "upstream-error") and "TypeError" in gemma4["message"]
    else:
        assert gemma4["verdict"] == "pass" and gemma4["max_logit_diff"] <= 1e-4, gemma4


def test_the_sweep_runs_with_sdpa_and_a_model_without_it_runs_eager(make_registry, capsys):
    """``doctor --sweep --attn sdpa``: the decoder-only models take SDPA (what from_pretrained gives users by
    default); one whose release has no SDPA for it is built eager instead of left out, as transformers falls back.
    The eager sweep compares the same kernels on both sides of the oracle; this one the kernel users run."""
    from hf_genfix import doctor
    from hf_genfix.oracles.precision import precision

    with precision(attn="sdpa"):
        llama = sweep.Subject("llama")
        assert llama.model.config._attn_implementation == "sdpa"
        for model_type in ("rwkv", "openai-gpt", "xglm", "gpt_neo"):  # those that have had no SDPA
            try:
                other = sweep.build(model_type)
            except sweep.ProbeSkipped as exc:
                assert "attention implementation" not in str(exc), exc
                continue
            assert other.config._attn_implementation in ("sdpa", "eager")
    code = doctor.main(["--sweep", "--attn", "sdpa", "--arch", "llama", "--scenario", "left-padded", "--json"],
                       registry=make_registry("fixed-here"))
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["sweep"]["attn"] == "sdpa"
    assert report["sweep"]["architectures"]["llama"]["scenarios"]["left-padded"]["verdict"] == "pass"
    assert "with sdpa attention" in sweep.render_text(report["sweep"])


def test_a_switched_off_patch_explains_the_scenario_its_manifest_claims():
    """patches/padding/right-padding.toml claims multi-turn: with that patch off, the right-padded first turn fails and
    the sweep names the patch instead of reporting a new defect."""
    import hf_genfix
    from hf_genfix import doctor

    registry = hf_genfix._activation.registry()
    doctor.import_targets(registry)
    with hf_genfix.disabled("right-padding"):
        out = sweep.run_sweep(registry, archs=["llama"], scenarios=["multi-turn"])
    (finding,) = out["known"]
    assert (finding["explained_by"], finding["verdict"]) == ("right-padding", "known"), finding
    assert "first turn on right-padded prompts" in finding["message"] and not sweep.failed(out)


def test_a_model_whose_own_generation_inputs_cannot_say_it_is_unsupported_there():
    """4.x CTRL's own prepare_inputs_for_generation takes the full ids (it cuts the cache length off the front):
    chunk-after-cache fails there by the model's contract, not by a defect (unsupported, with the reason). The
    generic method (llama) is not blamed. That it gives no position_ids from the mask is no contract (upstream
    removed the override in 5.1): the padded scenarios run and report it (prepare-inputs-mask-positions-ctrl)."""
    from hf_genfix.oracles.sweep import Subject

    subject = Subject("llama")
    assert subject.lacks(("cache_position",)) == subject.lacks(("padding",)) == ""
    base = type(subject.model)

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, use_cache=None, **kwargs):
        if past_key_values is None:
            past = 0
        elif hasattr(past_key_values, "get_seq_length"):
            past = past_key_values.get_seq_length()
        else:  # 4.46: llama's forward hands back tuples where it was given no cache
            past = past_key_values[0][0].shape[-2]
        return {"input_ids": input_ids[:, past:] if input_ids.shape[1] > past else input_ids[:, -1:],
                "past_key_values": past_key_values, "use_cache": use_cache,
                "attention_mask": kwargs.get("attention_mask")}

    legacy = type("LegacyForCausalLM", (base,), {"prepare_inputs_for_generation": prepare_inputs_for_generation,
                                                 "__module__": "transformers.models.legacy.modeling_legacy"})
    subject.model.__class__ = legacy
    subject._padding = None
    assert "takes no cache_position" in subject.lacks(("cache_position",))
    assert subject.lacks(("padding",)) == ""


def test_a_full_ids_model_reading_a_tuple_through_the_cache_api_is_judged_on_the_wrapped_cache():
    """4.54-4.55 CTRL: its forward hands back a legacy tuple while its own prepare_inputs_for_generation calls
    ``get_seq_length()`` on it (an AttributeError a caller never meets through generate(), which wraps the tuple in
    a DynamicCache). Asked with the tuple so wrapped, the model shows it slices by the cache length: unsupported by
    its contract, not an unknown defect."""
    import torch

    from hf_genfix.oracles.sweep import Subject

    subject = Subject("llama")
    base = type(subject.model)

    def forward(self, *args, **kwargs):
        out = base.forward(self, *args, **kwargs)
        cache = getattr(out, "past_key_values", None)
        if cache is not None and hasattr(cache, "to_legacy_cache"):
            out.past_key_values = cache.to_legacy_cache()
        return out

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, use_cache=None, **kwargs):
        past = 0 if past_key_values is None else past_key_values.get_seq_length()  # a tuple raises
        return {"input_ids": input_ids[:, past:] if input_ids.shape[1] > past else input_ids[:, -1:],
                "past_key_values": past_key_values, "use_cache": use_cache}

    if not hasattr(subject.model(torch.tensor([[5, 6]]), use_cache=True).past_key_values, "to_legacy_cache"):
        pytest.skip("this release's cache has no legacy form")
    legacy = type("LegacyForCausalLM", (base,), {"forward": forward,
                                                 "prepare_inputs_for_generation": prepare_inputs_for_generation,
                                                 "__module__": "transformers.models.legacy.modeling_legacy"})
    subject.model.__class__ = legacy
    assert isinstance(subject.model(torch.tensor([[5, 6]]), use_cache=True).past_key_values, tuple)
    assert "takes no cache_position" in subject.lacks(("cache_position",))


def test_a_model_whose_forward_returns_a_full_fixed_size_cache_cannot_be_continued_by_hand():
    """4.46-4.4x Gemma-2's forward returns a HybridCache of max_cache_len = the tokens given: the scenarios that
    continue a cache a forward returned (manual-loop, chunk-after-cache) cannot run there by the model's contract
    (unsupported, with the reason). A dynamic cache, or a fixed one with room, is not blamed."""
    from hf_genfix.oracles import sweep
    from hf_genfix.oracles.sweep import Subject

    class Fixed:
        def __init__(self, size):
            self.size = size

        def get_max_cache_shape(self):
            return self.size

    assert sweep.core._no_room(Fixed(8), 8) and not sweep.core._no_room(Fixed(16), 8) and not sweep.core._no_room(None, 8)
    assert not sweep.core._no_room(Fixed(None), 8) and not sweep.core._no_room(Fixed(-1), 8)
    assert {"manual-loop", "chunk-after-cache"} <= {n for n, f in sweep.SCENARIOS.items() if "continue" in f.needs}
    subject = Subject("llama")
    assert not subject.fixed_cache and subject.lacks(("kv", "continue")) == ""
    subject.fixed_cache = True
    assert "fixed-size cache" in subject.lacks(("kv", "padding", "continue"))


# -- recall (issue 36, section 1) -------------------------------------------------------------------------------
def test_recall_counts_a_fake_report():
    """``--recall`` asks the sweep for the patches whose probe saw the defect without them, and prints K of N with
    each miss named."""
    from hf_genfix import doctor

    report = {"patches": [{"id": "a", "without": {"outcome": "defect"}}, {"id": "b", "without": {"outcome": "defect"}},
                          {"id": "c", "without": {"outcome": "pass"}}, {"id": "d", "without": None},
                          # outside its range, another defect on file: not this patch's to find
                          {"id": "e", "without": {"outcome": "defect"}, "verdict": "open"}]}
    assert doctor.known_defects(report) == ["a", "b"]
    recall = {"transformers": "5.24.0", "known": ["a", "b"], "missed": {"b": "a tokenizer defect: no tokenizer"},
              "found": {"a": [{"arch": "llama", "scenario": "cached", "how": "it changes the call (1 call(s))"},
                              {"arch": "gpt2", "scenario": "cached", "how": "it changes the call (2 call(s))"}]}}
    assert sweep.recall_lines(recall) == [
        "recall on transformers 5.24.0: 1 of 2 known defects found by the sweep; missed: b",
        "  found a: llama / cached: it changes the call (1 call(s)) (+1 more)",
        "  MISSED b: a tokenizer defect: no tokenizer"]


def fixed_by_the_patch(subject):
    if _thing().answer() != 42:
        raise DefectObserved("answer is wrong", step=0, max_logit_diff=1.0)
    return {}


def test_recall_finds_a_defect_where_its_patch_alone_off_fails_or_forcing_it_fixes(make_registry, fake_scenarios,
                                                                                    monkeypatch):
    monkeypatch.setitem(sweep.SCENARIOS, "fixed_by_the_patch", fixed_by_the_patch)
    registry = make_registry("fixed-here", "unaffected-but-defect", "useless-fix")
    known = ["fixed-here", "unaffected-but-defect", "useless-fix"]
    out = sweep.run_sweep(registry, archs=["llama"], scenarios=["fixed_by_the_patch", "unless_forced", "always_wrong"],
                          recall=known)
    assert out["differential"]  # recall runs the differential
    rec = out["recall"]
    assert rec["known"] == known and set(rec["found"]) == {"fixed-here", "unaffected-but-defect"}
    assert [h["how"] for h in rec["found"]["fixed-here"]] == ["with it alone off the scenario fails"]
    assert rec["found"]["fixed-here"][0]["scenario"] == "fixed_by_the_patch"
    assert rec["found"]["unaffected-but-defect"][0]["how"] == "forcing it removes the failure"
    # useless-fix wraps the same method and changes nothing: upstream fails, but not because of it
    assert list(rec["missed"]) == ["useless-fix"]
    assert rec["missed"]["useless-fix"].startswith("no scenario where upstream fails is changed by it")
    text = sweep.render_text(out)
    assert "2 of 3 known defects found by the sweep; missed: useless-fix" in text
    assert "  MISSED useless-fix: no scenario where upstream fails is changed by it" in text


@pytest.mark.parametrize("verdict, found", [("corrected", True), ("identical", False)])
def test_recall_finds_a_patch_that_answers_a_call_upstream_raises_on(make_registry, verdict, found):
    """A scenario that lists the calls upstream raises on and goes on passes upstream; where the differential
    counts hf_genfix's answer to such a call as a correction, the patch that changed it is found (4.51.3's Gemma-2
    with cache_implementation="sliding_window": sliding-window-hybrid-cache was missed until session 29)."""
    from hf_genfix.oracles import differential

    recall = sweep.Recall(make_registry("fixed-here"), ["fixed-here"])
    pair = {"verdict": verdict, "upstream": differential.Observation("pass"),
            "ours": differential.Observation("pass", changed={"fixed-here": 1})}
    recall.attribute(lambda subject: {}, sweep.Subject("llama"), "cache-implementations", {"outcome": "pass"}, pair)
    assert ("fixed-here" in recall.hits) is found
    assert recall.failing_upstream == (1 if found else 0)


@pytest.mark.parametrize("reached, tried", [(frozenset(), False), (frozenset({"fixed-here"}), True),
                                             (frozenset({"*"}), True)])
def test_recall_switches_off_alone_only_a_patch_the_run_reached(make_registry, reached, tried):
    """A patch whose switch hf_genfix's run never read (or whose every read its wrapper took back: the call was
    upstream's) runs the same code switched off: that run cannot find it and is not made (NemotronH alone on
    5.12.1: 847 s -> 226 s). A run nobody watched (``{"*"}``) may have reached anything."""
    from hf_genfix.oracles import differential

    recall = sweep.Recall(make_registry("fixed-here"), ["fixed-here"])
    _thing()  # its target imported: the patch is installed
    pair = {"verdict": "corrected", "upstream": differential.Observation("wrong"),
            "ours": differential.Observation("pass", reached=reached)}
    recall.attribute(fixed_by_the_patch, sweep.Subject("llama"), "fixed_by_the_patch", {"outcome": "pass"}, pair)
    assert recall.failing_upstream == 1
    assert (recall.tried.get("fixed-here", 0) == 1) is tried


def test_recall_knows_what_the_sweep_cannot_reach(make_registry):
    recall = sweep.Recall(make_registry("fixed-here"), [])
    recall.targets = {"tok": ["transformers.tokenization_utils_base:PreTrainedTokenizerBase.__setattr__",
                              "transformers:PretrainedConfig.get_config_dict"],
                      "gen": ["transformers.generation.utils:GenerationMixin.generate"],
                      "rwkv": ["transformers.models.rwkv.modeling_rwkv:RwkvModel.forward"]}
    recall.families = {"remote": "remote-code"}
    llama = {"transformers.models.llama.modeling_llama"}
    assert recall.can_act("remote", llama).startswith("a remote-code defect")
    assert recall.can_act("tok", llama).startswith("a tokenizer")
    assert recall.can_act("gen", llama) == ""
    assert recall.can_act("rwkv", llama) == "its targets are another model's"
    assert recall.can_act("rwkv", {"transformers.models.rwkv.modeling_rwkv"}) == ""


# -- suspect and the calibration (issue 36, section 2) ----------------------------------------------------------
@pytest.mark.parametrize("diff, in_float64, verdict", [
    (5e-7, None, "pass"),             # rounding: no second look
    (5e-5, 2e-6, "pass"),             # float64 shrinks it to rounding: settled, listed with both figures
    (5e-5, 5e-5, "unknown"),          # float64 keeps its size: a defect, not rounding
    (5e-5, 2.2e-5, "suspect"),        # neither: listed for a look with the figure
    (1e-4, "crash", "suspect"),       # float64 cannot run it: listed, never counted as rounding
])
def test_a_pass_off_by_more_than_rounding_is_looked_at_again_in_float64(make_registry, monkeypatch, diff,
                                                                         in_float64, verdict):
    from hf_genfix.oracles.precision import current

    def close(subject):
        if current().dtype == "float64":
            if in_float64 == "crash":
                raise RuntimeError("no float64 kernel")
            assert in_float64 is not None, "a pass within rounding needs no second look"
            return {"max_logit_diff": in_float64}
        return {"max_logit_diff": diff}

    monkeypatch.setitem(sweep.SCENARIOS, "close", close)
    out = sweep.run_sweep(make_registry("fixed-here"), archs=["llama"], scenarios=["close"])
    assert out["architectures"]["llama"]["scenarios"]["close"]["verdict"] == verdict
    assert out["counts"]["suspect"] == len(out["suspect"]) == (verdict == "suspect")
    assert sweep.failed(out) == (verdict == "unknown")
    text = sweep.render_text(out)
    assert f"{int(verdict == 'suspect')} suspect" in text
    settled = in_float64 == 2e-6
    assert len(out["settled"]) == out["counts"]["settled"] == settled
    if settled:
        assert "  settled as rounding in float64 (1): llama / close 5e-05 -> 2e-06" in text
    if verdict == "suspect":
        assert f"  SUSPECT: llama / close: off by {diff:.3g} in float32: above the rounding threshold 2e-05" in text
        assert ("float64: 2.2e-05, neither" if in_float64 == 2.2e-5 else "not settled: in float64 it is crash") \
            in text
    if verdict == "unknown":
        assert "float64 keeps it (5e-05): not rounding, a defect" in text


def test_the_float64_second_look_takes_sdpa_where_eager_attention_gives_nan_upstream():
    """Upstream, on every release: a left-padded batch in float64 with eager attention gives NaN (its softmax runs in
    float32, where finfo(float64).min is -inf; docs/precision.md). 5.25.0's 10 suspects, all padded second turns and
    reused prefixes, stayed unsettled on it; the second look now reruns such a scenario with SDPA."""
    from hf_genfix.oracles.precision import precision

    with precision("float64"):
        out, _ = sweep.attempt(sweep.SCENARIOS["left-padded"], sweep.Subject("llama"))
    assert out["outcome"] == "defect" and out["max_logit_diff"] != out["max_logit_diff"]  # NaN: upstream's
    value, why = sweep.core.SecondLook("decoder-only", "llama").diff("left-padded")
    assert why == "" and value is not None and value <= sweep.core.ROUNDING, why


def test_without_sdpa_the_float64_second_look_keeps_eager_softmax_in_float64(monkeypatch):
    """A model without SDPA (Zamba on 4.x) had no way round upstream's float64 NaN: its suspects stayed unsettled
    (4.47.1's and 4.57.1's Zamba second turn, 7.8e-05 and 8.4e-05). The second look then reruns eager attention with
    its float32 softmax kept in float64; the patch of ``softmax`` is gone after the block."""
    import torch.nn.functional as functional

    from hf_genfix.oracles.precision import precision

    plain = functional.softmax
    look = sweep.core.SecondLook("decoder-only", "llama")
    real_run = look._run
    # As a model without SDPA: the SDPA rerun builds nothing.
    monkeypatch.setattr(look, "_run", lambda name, attn, wide_softmax=False: (None, "no SDPA") if attn == "sdpa"
                        else real_run(name, attn, wide_softmax))
    with precision("float64"):
        out, _ = sweep.attempt(sweep.SCENARIOS["left-padded"], sweep.Subject("llama"))
    assert out["max_logit_diff"] != out["max_logit_diff"]  # NaN upstream with eager attention
    value, why = look.diff("left-padded")
    assert why == "" and value is not None and value <= sweep.core.ROUNDING, why
    assert functional.softmax is plain


def test_half_precision_has_no_suspect_band():
    from hf_genfix.oracles.precision import precision

    with precision("bfloat16"):
        assert sweep.rounding_limit() == 2.5e-2 and not sweep.suspect(1e-2)
    assert sweep.rounding_limit() == 2e-5 and sweep.suspect(3e-5) and not sweep.suspect(1.5e-5)
    assert not sweep.suspect(True)


def test_a_mixture_of_experts_too_large_for_the_sweep_gets_fewer_smaller_experts():
    """Qwen2-MoE's tiny text sizes leave 60 experts and a shared expert of 5632 (17.3M parameters): the sweep built
    none and missed sliding-window-full-cache-qwen2-moe on 4.57.6. The MoE sizes shrink only where the model would
    otherwise not be built: Mixtral, small enough already, keeps its experts (and so its weights)."""
    config = sweep.tiny_config("qwen2_moe")
    assert sweep.core._moe_overrides(config, {})["num_experts"] == 8
    model = sweep.build("qwen2_moe")
    assert sum(p.numel() for p in model.parameters()) <= sweep.MAX_PARAMS
    assert model.config.num_experts == 8 and model.config.num_experts_per_tok == 2
    assert sweep.build("mixtral").config.num_local_experts == sweep.tiny_config("mixtral").num_local_experts
    # DeepSeek-V3: latent-attention ranks of 1536 and 512 shrunk too, and a forward runs (its keys per head)
    import torch

    from hf_genfix.oracles import ProbeSkipped

    try:
        deepseek = sweep.build("deepseek_v3")
    except ProbeSkipped:
        return  # not in this release
    assert deepseek.config.q_lora_rank == 16 and deepseek.config.kv_lora_rank == 16
    with torch.no_grad():
        assert deepseek(torch.tensor([[3, 4, 5]])).logits.shape == (1, 3, deepseek.config.vocab_size)


def test_dbrx_is_built_tiny():
    """DBRX keeps its sizes in nested configs (2.8M parameters on 4.x from its expert width), 5.x's attention reads a
    rope_theta its attention config no longer declares, and 5.0's expert config has a hidden size of its own: it was
    never swept. Built now, with experts that route (2 of 4) and a forward that runs."""
    import torch

    model = sweep.build("dbrx")
    assert sum(p.numel() for p in model.parameters()) <= sweep.MAX_PARAMS
    assert model.config.ffn_config.moe_top_k == 2 and model.config.ffn_config.moe_num_experts == 4
    with torch.no_grad():
        assert model(torch.tensor([[3, 4, 5]])).logits.shape == (1, 3, model.config.vocab_size)


@pytest.mark.parametrize("model_type", ["dots3_note_text", "ergo", "kolibri1_1", "inkling2_text", "dory", "sarvam_mla"])
def test_the_newest_text_models_are_built_tiny(model_type):
    """5.2x text models whose configs refused or outgrew the tiny defaults (grouped heads refused, a 32768-wide
    dense block, indexer heads and NVFP4 blocks, 200058-wide logits, looped layers deeper than the tiny model, latent
    attention with grouped heads): built, and a forward runs."""
    import torch

    from hf_genfix.oracles import ProbeSkipped

    try:
        model = sweep.build(model_type)
    except ProbeSkipped as exc:
        if "not in this transformers release" in str(exc):
            pytest.skip(str(exc))
        raise
    assert sum(p.numel() for p in model.parameters()) <= sweep.MAX_PARAMS
    with torch.no_grad():
        assert model(torch.tensor([[3, 4, 5]])).logits.shape[:2] == (1, 3)


def test_the_mamba2_hybrids_are_built_with_an_attention_layer():
    """Bamba and GraniteMoeHybrid's configs refused the tiny sizes at construction (128 Mamba heads do not divide
    64) and were reported as absent from the release; Jamba needs no CUDA kernel and an attention layer in two."""
    from hf_genfix.oracles import ProbeSkipped

    for model_type in ("bamba", "granitemoehybrid", "jamba"):
        try:
            model = sweep.build(model_type)
        except ProbeSkipped as exc:
            assert "not in this transformers release" in str(exc)
            continue
        assert sum(p.numel() for p in model.parameters()) <= sweep.MAX_PARAMS


def test_the_sweeps_tiny_models_are_loud():
    """The calibration rule (oracles.tiny.calibrate): logits of std ~1, so that a defect (the first token masked
    out, one pad attended to) moves a logit by far more than 1e-3 while a correct cached path stays within
    rounding. Uncalibrated, BLOOM's ALiBi moved it by 2.9e-3 for the first token masked out."""
    import torch

    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps, left_pad
    from hf_genfix.oracles.reference import reference_logits
    from hf_genfix.oracles.tiny import ROUNDING

    for model_type in ("llama", "bloom"):
        s = sweep.Subject(model_type)
        (row,) = s.rows(10, seed=6)
        full = reference_logits(s.model, row)
        assert 0.5 < float(full.std()) < 2
        ids = torch.tensor([row])
        mask = torch.ones_like(ids)
        mask[0, 0] = 0
        with torch.no_grad():
            masked = s.model(input_ids=ids, attention_mask=mask).logits[0, 1:]
        assert float((masked - full[1:]).abs().max()) > 1e-1
        rows = s.rows(9, 4, 12, seed=5)
        run = generate_steps(s.model, *left_pad(rows), max_new_tokens=6)
        assert check_rows_against_reference(s.model, rows, run, "calibrated")["max_logit_diff"] < ROUNDING


def test_penalties_with_inputs_embeds_alone_are_judged_not_called_unsupported():
    """transformers only warns that repetition_penalty / no_repeat_ngram_size with inputs_embeds alone act on the
    generated tokens: a warning is not a refusal, so the call is judged row by row against the definition. 5.23
    began to skip each row's padding length of the ids it penalises, which with inputs_embeds alone are the
    generated tokens: a padded row's first tokens escape the penalty (row 0 has 2 pads; 5.24.0: wrong at step 1,
    4.57.6: right)."""
    from hf_genfix._registry import transformers_version
    from hf_genfix.oracles.differential import PASS, WRONG
    from packaging.version import Version

    import hf_genfix

    func = sweep.SCENARIOS["inputs-embeds-penalties"]
    s = sweep.Subject("llama")
    assert not func.declines(s) and not s.lacks(func.needs)
    with hf_genfix.disabled():
        upstream = sweep.observe(func, s)
    if Version(transformers_version()) >= Version("5.23.0"):
        assert upstream.outcome == WRONG, upstream.message
        assert "with repetition_penalty" in upstream.message and "row 0" in upstream.message
        assert upstream.figures["step"] == 1 and upstream.figures["max_logit_diff"] > 1e-1
    else:
        assert upstream.outcome == PASS, upstream.message
        assert upstream.figures["options"] == "repetition_penalty, no_repeat_ngram_size"


def test_prompt_lookup_without_eos_equals_greedy():
    """Prompt lookup with eos_token_id=None and 5 new tokens (not a multiple of its 3 candidates) is plain greedy by
    definition; 4.44-5.12 raise a TypeError there (decoding-prompt-lookup-no-eos, which recall missed before)."""
    import hf_genfix
    from hf_genfix._registry import transformers_version
    from hf_genfix.oracles.differential import PASS, RAISED
    from packaging.version import Version

    s = sweep.Subject("llama")
    func = sweep.SCENARIOS["prompt-lookup-plain"]
    ours = sweep.observe(func, s)
    assert ours.outcome == PASS and ours.figures["tokens"] == 5, ours.message
    with hf_genfix.disabled():
        upstream = sweep.observe(func, s)
    if Version("4.44.0") <= Version(transformers_version()) < Version("5.13.0"):
        assert upstream.outcome == RAISED and upstream.error == "TypeError", upstream.message
    else:
        assert upstream.outcome == PASS


def test_a_refusal_is_named_by_the_patch_whose_fix_defines_it():
    """Two patches can claim one scenario (prompt lookup: decoding-prompt-lookup-length and LFM2's refusal of
    assisted decoding): a refusal in words is explained by the one whose fix defines the exception it raised."""
    from hf_genfix import catalog
    from hf_genfix.oracles.sweep.core import _defines

    lfm2 = catalog.manifest("model-lfm2-conv-continuation")
    lookup = catalog.manifest("decoding-prompt-lookup-length")
    assert _defines(lfm2, "Lfm2AssistedUnsupported")
    assert not _defines(lookup, "Lfm2AssistedUnsupported")
    assert not _defines(lfm2, "ValueError_that_no_fix_defines")


def _nan_where(model, when):
    """A forward hook making the logits NaN in the rows of a call where ``when(input_ids, attention_mask)`` says."""
    import torch

    def hook(module, args, kwargs, output):
        ids = kwargs.get("input_ids", args[0] if args else None)
        rows = when(ids, kwargs.get("attention_mask"))
        if rows is not None and bool(rows.any()):
            output.logits[rows] = float("nan")
        return output

    return model.register_forward_hook(hook, with_kwargs=True)


def test_a_nan_from_padding_is_a_defect_not_a_model_that_cannot_take_padding():
    """Gemma-3n on 4.53.0 gave NaN behind a pad; the padding check read it as "cannot take padding" and ten padded
    scenarios were called unsupported. NaN is no contract of a model's: the padded scenarios run and report it."""
    subject = sweep.Subject("llama")
    handle = _nan_where(subject.model, lambda ids, mask: None if mask is None else (mask == 0).any(dim=1))
    try:
        assert subject.lacks(("padding",)) == ""
        with pytest.raises(DefectObserved, match="nan"):
            sweep.SCENARIOS["left-padded"](subject)
    finally:
        handle.remove()


def test_beams_ranked_by_nan_are_a_defect_though_cached_and_uncached_agree():
    """A NaN logit gives a NaN beam score, which ranks first with or without the cache (Gemma-3n's pad token on
    4.53.0): the beam scenarios check the model's forward of what the beams returned."""
    subject = sweep.Subject("llama")
    handle = _nan_where(subject.model, lambda ids, mask: (ids == ids[0, -1]).any(dim=1) if ids.shape[1] > 8 else None)
    try:
        with pytest.raises(DefectObserved, match="NaN"):
            sweep.SCENARIOS["beam"](subject)
    finally:
        handle.remove()
    assert sweep.SCENARIOS["beam"](sweep.Subject("llama"))["tokens"] > 0


def test_parameters_an_init_never_writes_are_drawn_and_others_kept():
    """Llama-4's experts on 4.51 are torch.empty tensors its init does not know: memory as found (NaN in some runs).
    The tiny builders draw those from the seed and keep every parameter the release's init wrote."""
    import torch

    from hf_genfix.oracles.tiny import draw_unwritten

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))
    kept = model[0].weight.detach().clone()
    with torch.no_grad():
        model[1].weight.fill_(float("nan"))
        model[1].bias.fill_(1e30)
    draw_unwritten(model, seed=0)
    assert torch.equal(model[0].weight, kept)
    assert bool(torch.isfinite(model[1].weight).all()) and float(model[1].bias.abs().max()) < 1
