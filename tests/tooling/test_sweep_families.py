"""``hf-genfix doctor --sweep`` beyond decoder-only: the encoder-decoder and image-text kinds
(``oracles.sweep.families``): which model types each kind covers, that the oracles pass on correct models, and
that they catch a batch that is not each row alone (a generate() whose encoder mask shows the pads, or that gives a
row another row's image)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from doctor_fixture import make_registry  # noqa: E402,F401 - a fixture
from hf_genfix.oracles import DefectObserved, sweep
from hf_genfix.oracles.sweep import families as sweep_families  # noqa: E402

S2S = ["s2s-cached", "s2s-uncached", "s2s-padded", "s2s-static-cache", "s2s-beam"]
IMAGE = ["image-cached", "image-uncached", "image-padded", "image-padded-same-image", "image-static-cache"]


def test_kinds_cover_encoder_decoder_and_image_text_types():
    kinds = sweep.kinds_of()
    assert {t for t in ("bart", "t5", "marian", "pegasus", "m2m_100") if kinds.get(t) == "encoder-decoder"} == {
        "bart", "t5", "marian", "pegasus", "m2m_100"}
    assert {t for t in ("llava", "paligemma", "qwen2_vl") if kinds.get(t) == "image-text"} == {
        "llava", "paligemma", "qwen2_vl"}
    assert kinds["llama"] == "decoder-only" and "bart" not in sweep.decoder_only_types()
    assert {sweep.kind_of(sweep.SCENARIOS[n]) for n in S2S} == {"encoder-decoder"}
    assert {sweep.kind_of(sweep.SCENARIOS[n]) for n in IMAGE} == {"image-text"}


def test_encoder_decoder_oracles_pass(make_registry):
    out = sweep.run_sweep(make_registry("fixed-here"), archs=["bart", "t5", "llama"], scenarios=S2S + ["cached"])
    assert out["kinds"]["encoder-decoder"] == {"architectures": ["bart", "t5"], "scenarios": S2S}
    for arch in ("bart", "t5"):
        runs = out["architectures"][arch]["scenarios"]
        assert {k: v["outcome"] for k, v in runs.items()} == dict.fromkeys(S2S, "pass"), (arch, runs)
        assert runs["s2s-padded"]["steps_compared"] == 3 * 6
    # a decoder-only type runs the decoder-only scenario only
    assert set(out["architectures"]["llama"]["scenarios"]) == {"cached"}
    assert "by kind: decoder-only 1 architectures x 1 scenarios; encoder-decoder 2" in sweep.render_text(out)
    assert not sweep.failed(out)


def test_image_text_oracles_pass(make_registry):
    archs = ["llava", "qwen2_vl", "idefics3"]
    out = sweep.run_sweep(make_registry("fixed-here"), archs=archs, scenarios=IMAGE)
    built = [a for a in archs if a in out["architectures"]]
    assert "llava" in built and len(built) >= 2, out["not_buildable"]  # 4.46's Qwen2-VL config cannot be built tiny
    for arch in built:
        runs = out["architectures"][arch]["scenarios"]
        outcomes = {k: v["outcome"] for k, v in runs.items()}
        # a static cache the release's LLaVA refuses in words (4.46) is unsupported; everything else passes
        assert outcomes.pop("image-static-cache") in ("pass", "unsupported"), (arch, runs)
        assert outcomes == dict.fromkeys(set(IMAGE) - {"image-static-cache"}, "pass"), (arch, runs)
    assert not sweep.failed(out)


def _generate_dropping(model, monkeypatch, change):
    """model.generate with ``change(kwargs)`` applied first (an instance attribute: one model only)."""
    plain = model.generate

    def generate(*args, **kwargs):
        change(kwargs)
        return plain(*args, **kwargs)

    monkeypatch.setattr(model, "generate", generate, raising=False)


def test_encoder_decoder_oracle_catches_an_encoder_mask_that_shows_the_pads(monkeypatch):
    subject = sweep_families.Seq2SeqSubject("bart")
    assert sweep_families.s2s_padded(subject)["max_logit_diff"] < 1e-4
    # every encoder position visible, pads included (4.x would infer a dropped mask from the pad id)
    _generate_dropping(subject.model, monkeypatch, lambda kw: kw.update(attention_mask=kw["attention_mask"] | 1))
    with pytest.raises(DefectObserved, match="right-padded encoder batch vs each row alone"):
        sweep_families.s2s_padded(subject)


def test_image_text_oracle_catches_a_row_given_another_rows_image(monkeypatch):
    subject = sweep_families.ImageTextSubject("llava")
    assert sweep_families.image_padded(subject)["max_logit_diff"] < 1e-4
    _generate_dropping(subject.model, monkeypatch,
                       lambda kw: kw.update(pixel_values=kw["pixel_values"].flip(0)))
    with pytest.raises(DefectObserved, match="different images vs each row alone"):
        sweep_families.image_padded(subject)


def test_paligemma_reference_is_the_prefix_lm():
    """The prompt (image + text) attends both ways, generated tokens causally: the reference of the prompt's last
    position does not change when generated tokens follow it (4.x made a forward's whole input the prefix)."""
    subject = sweep_families.ImageTextSubject("paligemma")
    (prompt,) = subject.prompts(4)
    image = subject.image(0)
    alone = subject.reference(prompt, image, [])
    followed = subject.reference(prompt, image, [7, 8, 9])
    assert float((alone - followed[: len(prompt)]).abs().max()) < 1e-4


def test_a_quick_sweep_samples_each_kind(make_registry):
    out = sweep.run_sweep(make_registry("fixed-here"), scenarios=["s2s-cached"], quick=True)
    assert list(out["kinds"]) == ["encoder-decoder"]
    assert len(out["architectures"]) == sweep_families.QUICK_PER_KIND


def test_a_run_drops_a_cache_kept_on_a_submodule():
    """generate() keeps a static cache on the module that generates (4.57 Kosmos-2: its text model); each image-text
    run starts without it, so the order of the runs never changes what upstream raises."""
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(1, 1))
    model[0]._cache = "left by an earlier run"
    sweep_families._fresh(model)
    assert not hasattr(model[0], "_cache")


def test_a_decoder_whose_earlier_logits_depend_on_later_tokens_is_not_swept(monkeypatch):
    """The oracle reads one forward over the final decoder sequence at every position: a decoder where position 0
    changes with what follows (ProphetNet's n-gram streams on 4.x) would be judged wrong by it, so it is not built."""
    import torch

    def reference(self, encoder_row, decoder_ids):
        logits = torch.zeros(len(decoder_ids), 8)
        logits[0, 0] = 1e-3 * len(decoder_ids)  # position 0 moves with the sequence's length
        return logits

    monkeypatch.setattr(sweep_families.Seq2SeqSubject, "reference", reference)
    with pytest.raises(sweep_families.ProbeSkipped, match="change with the tokens after it"):
        sweep_families.Seq2SeqSubject("bart")


def test_the_tiny_remote_code_repos_are_a_kind_of_their_own():
    """Recall found no remote-code defect: the sweep built no remote-code model. Each tiny remote repo is now an
    architecture (remote-<family>), loaded afresh inside every run, so that the run without hf_genfix loads it
    without hf_genfix too; its names do not take a built-in model type (bloom stays decoder-only)."""
    import hf_genfix

    kinds = sweep.kinds_of()
    assert kinds["remote-phi3"] == "remote-code" and kinds["bloom"] == "decoder-only"
    out = sweep.run_sweep(hf_genfix._activation.registry(), archs=["remote-phi3"], scenarios=["remote-cached", "remote-beam"],
                          differential_all=True)
    runs = out["architectures"]["remote-phi3"]["scenarios"]
    assert {n: o["verdict"] for n, o in runs.items()} == {"remote-cached": "pass", "remote-beam": "pass"}
    assert {o["differential"]["verdict"] for o in runs.values()} <= {"identical", "corrected"}
    assert not sweep.failed(out)


def test_calibration_leaves_sinusoidal_positions_as_defined():
    """FSMT recomputes its sinusoidal positions when a sequence outgrows them: a scaled copy disagreed with itself
    (s2s-uncached off by 0.78 on 5.24.0), so the calibration leaves tables that are defined, not drawn."""
    import torch

    from hf_genfix.oracles import ProbeSkipped

    try:
        model = sweep_families.build_seq2seq("fsmt")
    except ProbeSkipped as exc:
        pytest.skip(str(exc))
    tables = [m for m in model.modules() if "Sinusoidal" in type(m).__name__]
    assert tables
    for table in tables:
        num, dim = table.weight.shape
        expected = table.get_embedding(num, dim, table.padding_idx)
        assert torch.equal(table.weight.detach().float(), expected.float())
    assert 0.15 < float(model.get_input_embeddings().weight.std()) < 2  # the rest is calibrated (drawn: 0.02)


def test_a_config_part_no_model_is_registered_under_is_not_a_second_model():
    """FSMT's ``decoder`` (4.x: a DecoderConfig, model_type "fsmt_decoder", in ``sub_configs`` on 4.57) is FSMT's own
    vocabulary and start token: FSMT is built. A vision tower or an ``AutoConfig`` part is another model's: not."""
    from transformers import FSMTConfig, LlavaConfig

    assert not sweep.core._composite(FSMTConfig())
    assert sweep.core._composite(LlavaConfig())
    # MPT's and DBRX's attn_config / ffn_config have no model type at all: their own parts (MPT was never swept)
    from transformers import DbrxConfig, MptConfig

    assert not sweep.core._composite(MptConfig()) and not sweep.core._composite(DbrxConfig())
    sweep_families.build_seq2seq("fsmt")  # every release: no ProbeSkipped


def test_an_mrope_forward_that_numbers_nothing_itself_is_given_the_definitions_positions():
    """4.46's Qwen2-VL forward computes no M-RoPE positions without position_ids (its prepare_inputs_for_generation
    does), so a plain no-cache forward of the row was no oracle there: every image scenario differed at step 0 (0.53).
    Its reference is given the definition's positions; a release whose forward computes them keeps its own."""
    import transformers
    from packaging.version import Version

    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep.families import ImageTextSubject

    try:
        subject = ImageTextSubject("qwen2_vl")
    except ProbeSkipped as exc:
        pytest.skip(str(exc))
    old = Version(Version(transformers.__version__).base_version) < Version("4.47.0")
    assert subject.forward_defines_no_mrope() is old
    assert sweep.SCENARIOS["image-cached"](subject)["max_logit_diff"] < 1e-4
