"""Never worse than upstream: every sweep scenario, without hf_genfix and with it, in one process.

For a representative set of architectures (rotary and learned positions, ALiBi, sliding windows, a recurrent
model, two encoder-decoders, four image-text models) every scenario of ``hf-genfix doctor --sweep`` runs inside ``hf_genfix.disabled()`` and then with the
patches as a user gets them (every target module imported, as doctor has them), and
``hf_genfix.oracles.differential.compare`` judges the pair: where upstream passes its oracle hf_genfix's outputs
are bitwise identical (sequences, scores, logits, the returned cache's length); where upstream is wrong or raises,
hf_genfix passes the oracle or raises the same exception type. The save -> reload -> compare scenarios
(``oracles.saving``: whole saved folders, byte for byte) are judged and counted with them. A ``worse`` pair fails
the test; the counts are printed ("N scenarios: X identical, Y corrected, Z same-exception, 0 worse").
``hf-genfix doctor --sweep --differential`` runs the same comparison on every architecture of the release.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

# llama: rotary positions from the mask; gpt2: learned absolute positions; gpt_neox: partial rotary, the older
# code path; bloom: ALiBi, no position_ids; mistral / qwen2: sliding windows (all layers / some layers);
# rwkv: a recurrent state, no KV cache, no attention mask. Encoder-decoder: bart (learned positions), t5 (relative
# buckets); image-text (oracles.sweep.families): llava, paligemma (prefix-LM token types), qwen2_vl (M-RoPE),
# kosmos-2 (model-kosmos2-padded-positions from 4.54).
ARCHS = ("llama", "gpt2", "gpt_neox", "bloom", "mistral", "qwen2", "rwkv", "bart", "t5", "llava", "paligemma",
         "qwen2_vl", "kosmos-2", "led", "fsmt")


def test_never_worse_than_upstream(capsys):
    import hf_genfix
    from hf_genfix import doctor
    from hf_genfix.oracles import differential, sweep

    registry = hf_genfix._activation.registry()
    version = doctor.import_targets(registry)
    with doctor.quiet_logs():
        out = sweep.run_sweep(registry, archs=ARCHS, differential_all=True)
    pairs = {(arch, name): o["differential"] for arch, a in out["architectures"].items()
             for name, o in a["scenarios"].items() if "differential" in o}
    built = sorted(out["architectures"])
    with capsys.disabled():
        print(f"\ndifferential on transformers {version}, {len(built)} architectures ({', '.join(built)}) x "
              f"{len(out['scenarios'])} scenarios: {out['differential']['summary']}")
    assert {"llama", "gpt2", "mistral"} <= set(built), out["not_buildable"]
    assert pairs, "no scenario ran"
    worse = [f"{arch} / {name}: {d['detail']}" for (arch, name), d in pairs.items()
             if d["verdict"] == differential.WORSE]
    # save -> reload -> compare (oracles.saving), counted in the same summary
    assert out["saved"]["pairs"], "no save scenario ran"
    worse += [f"{name}: {d['detail']}" for name, d in out["saved"]["pairs"].items()
              if d["verdict"] == differential.WORSE]
    assert not worse, "hf_genfix is worse than upstream:\n" + "\n".join(worse)


def _obs(outcome, output=0.0, error=None, message="m", where=""):
    import torch

    from hf_genfix.oracles.differential import Observation

    return Observation(outcome, message, error, outputs=[{"call": "generate", "sequences": torch.tensor([output])}],
                       where=where)


@pytest.mark.parametrize("upstream, ours, verdict", [
    (("pass", 1.0), ("pass", 1.0), "identical"),
    (("pass", 1.0), ("pass", 1.5), "worse"),            # right both times, but not bitwise the same
    (("pass", 1.0), ("wrong", 1.0), "worse"),
    (("pass", 1.0), ("raised", 1.0, "ValueError"), "worse"),  # an exception where upstream worked
    (("wrong", 1.0), ("pass", 2.0), "corrected"),
    (("raised", 0.0, "TypeError"), ("pass", 2.0), "corrected"),
    (("raised", 0.0, "TypeError"), ("raised", 0.0, "TypeError"), "same-exception"),
    (("raised", 0.0, "TypeError"), ("raised", 0.0, "ValueError"), "worse"),
    # both raised in transformers' own code (5.2.0 GLM-MoE-DSA: hf_genfix past upstream's TypeError to the model's
    # RuntimeError); where hf_genfix's own code raises, or the place is unknown, another exception stays worse
    (("raised", 0.0, "TypeError", "m", "site-packages/transformers/generation/candidate_generator.py:40"),
     ("raised", 0.0, "RuntimeError", "m", "site-packages/transformers/models/glm_moe_dsa/modeling_glm_moe_dsa.py:225"),
     "same-exception"),
    (("raised", 0.0, "TypeError", "m", "site-packages/transformers/generation/utils.py:1"),
     ("raised", 0.0, "RuntimeError", "m", "site-packages/hf_genfix/_patches/x/fix.py:9"), "worse"),
    # upstream fails in a remote-code model's own module, hf_genfix past it in transformers' (4.51.0's MiniCPM)
    (("raised", 0.0, "ImportError", "m", "/root/.cache/huggingface/modules/transformers_modules/m/modeling_m.py:3"),
     ("raised", 0.0, "NameError", "m", "site-packages/transformers/modeling_utils.py:9"), "same-exception"),
    (("raised", 0.0, "ImportError", "m", "/root/.cache/huggingface/modules/transformers_modules/m/modeling_m.py:3"),
     ("raised", 0.0, "NameError", "m", "/root/.cache/huggingface/modules/transformers_modules/m/modeling_m.py:9"),
     "worse"),
    # loud both ways, and hf_genfix's failure is transformers refusing the call in words (5.2's MiniMax)
    (("raised", 0.0, "TypeError"), ("raised", 0.0, "RuntimeError", "MiniMaxCache doesnot support `crop` method"),
     "same-exception"),
    (("wrong", 1.0), ("raised", 0.0, "RuntimeError", "this is not supported"), "refused"),
    (("raised", 0.0, "RuntimeError"), ("raised", 0.0, "MambaStateChunkUnsupported"), "same-exception"),
    (("raised", 0.0, "TypeError"), ("wrong", 0.0), "worse"),  # silently wrong where upstream raised
    (("wrong", 1.0), ("wrong", 1.0), "unchanged"),
    (("wrong", 1.0), ("wrong", 3.0), "worse"),           # another wrong answer
    (("wrong", 1.0), ("raised", 0.0, "ValueError"), "refused"),
    (("skipped",), ("skipped",), "skipped"),
])
def test_compare(upstream, ours, verdict):
    from hf_genfix.oracles.differential import compare

    assert compare(_obs(*upstream), _obs(*ours))[0] == verdict


def _rows(outcome, logits, row=None):
    import torch

    from hf_genfix.oracles.differential import Observation

    figures = {} if row is None else {"row": row}
    return Observation(outcome, f"row {row}", None, figures,
                       outputs=[{"call": "generate", "logits": (torch.tensor(logits),)}])


NAN = float("nan")


@pytest.mark.parametrize("upstream, ours, verdict", [
    # NaN where upstream has NaN is upstream's output (torch.equal says NaN != NaN): 4.53.0's Gemma-3n batch
    (("wrong", [[1.0, 2.0], [NAN, NAN]], 0), ("wrong", [[1.0, 2.0], [NAN, NAN]], 1), "unchanged"),
    (("pass", [[1.0, NAN]]), ("pass", [[1.0, NAN]]), "identical"),
    # hf_genfix changes row 0 only (its first wrong row is 1): that row passes, the rest is upstream's
    (("wrong", [[1.0, 2.0], [NAN, 5.0]], 0), ("wrong", [[1.5, 2.0], [NAN, 5.0]], 1), "unchanged"),
    # ... but a change in a row it gets wrong, or one the oracle never reached, is another wrong answer
    (("wrong", [[1.0, 2.0], [NAN, 5.0]], 0), ("wrong", [[1.5, 2.0], [NAN, 6.0]], 1), "worse"),
    (("wrong", [[1.0, 2.0], [3.0, 5.0]], 0), ("wrong", [[1.5, 2.0], [3.0, 5.0]], 0), "worse"),
])
def test_rows_left_as_upstreams(upstream, ours, verdict):
    from hf_genfix.oracles.differential import compare

    assert compare(_rows(*upstream), _rows(*ours))[0] == verdict


def _parts(values, wrong, passed="", crashed="", tagged=True):
    import torch

    from hf_genfix.oracles.differential import Observation

    outputs = [{"call": "generate", "sequences": torch.tensor([v]), **({"part": name} if tagged else {})}
               for name, v in values.items()]
    figures = {"wrong_parts": wrong, "passed_parts": passed, "crashed_parts": crashed}
    return Observation("wrong", f"wrong: {wrong}", None, figures, outputs=outputs)


@pytest.mark.parametrize("upstream, ours, verdict", [
    # 4.48.0's Cohere-2, left-padded-cache-implementations: "hybrid" corrected, "sliding_window" bitwise upstream's
    (({"hybrid": 1.0, "sliding_window": 2.0}, "hybrid,sliding_window"),
     ({"hybrid": 1.5, "sliding_window": 2.0}, "sliding_window", "hybrid"), "unchanged"),
    # a run hf_genfix changes and still gets wrong is another wrong answer
    (({"hybrid": 1.0, "sliding_window": 2.0}, "hybrid,sliding_window"),
     ({"hybrid": 1.5, "sliding_window": 2.5}, "sliding_window", "hybrid"), "worse"),
    # a run wrong with hf_genfix that upstream got right
    (({"hybrid": 1.0, "sliding_window": 2.0}, "hybrid"),
     ({"hybrid": 1.5, "sliding_window": 2.0}, "sliding_window", "hybrid"), "worse"),
    # a run that crashed with hf_genfix, or calls outside any run: judged whole
    (({"hybrid": 1.0, "sliding_window": 2.0}, "hybrid,sliding_window"),
     ({"hybrid": 1.5, "sliding_window": 2.0}, "sliding_window", "hybrid", "static"), "worse"),
    (({"hybrid": 1.0, "sliding_window": 2.0}, "hybrid,sliding_window", "", "", False),
     ({"hybrid": 1.5, "sliding_window": 2.0}, "sliding_window", "hybrid", "", False), "worse"),
])
def test_runs_of_a_scenario_are_judged_one_by_one(upstream, ours, verdict):
    from hf_genfix.oracles.differential import compare

    assert compare(_parts(*upstream), _parts(*ours))[0] == verdict


@pytest.mark.parametrize("upstream_diff, ours_diff, verdict", [
    (6.8e-5, 5e-9, "corrected"),  # 4.57.6 cohere: upstream off by 6.8e-5 under the tolerance, hf_genfix by noise
    (1.8e-6, 1.5e-8, "corrected"),  # 4.57.6 modernbert-decoder
    (2e-6, 1e-6, "worse"),  # both at the same distance: a different float path, not a correction
    (5e-7, 1e-9, "worse"),  # upstream within float noise of the oracle: it is right, equality is owed
])
def test_both_pass_but_hf_genfix_is_10x_closer_to_the_oracle(upstream_diff, ours_diff, verdict):
    from hf_genfix.oracles.differential import compare

    upstream, ours = _obs("pass", 1.0), _obs("pass", 1.5)
    upstream.figures, ours.figures = {"max_logit_diff": upstream_diff}, {"max_logit_diff": ours_diff}
    assert compare(upstream, ours)[0] == verdict


@pytest.mark.parametrize("upstream_cache, ours_cache, same_tokens, verdict", [
    ((0, 14), (14, 14), True, "corrected"),   # 5.25's RecurrentGemma: a cache of 14 positions that says 0
    ((14, 14), (0, 14), True, "worse"),       # hf_genfix's cache would misreport its length
    ((0, 14), (14, 14), False, "worse"),      # the length told right does not excuse another token
    ((0, 14), (13, 14), True, "worse"),       # nor a length that is not the positions held
])
def test_a_returned_cache_that_says_the_positions_it_holds(upstream_cache, ours_cache, same_tokens, verdict):
    from hf_genfix.oracles.differential import compare

    upstream, ours = _obs("pass", 1.0), _obs("pass", 1.0 if same_tokens else 1.5)
    for obs, (length, held) in ((upstream, upstream_cache), (ours, ours_cache)):
        obs.outputs[0].update(cache_length=length, cache_held=held)
    assert compare(upstream, ours)[0] == verdict


@pytest.mark.parametrize("ours_outputs, ours_caches, loud, verdict", [
    ([2.0, 1.0], "sliding_window, hybrid", "sliding_window: upstream raises it too: RuntimeError", "corrected"),
    ([2.0, 1.5], "sliding_window, hybrid", "sliding_window: upstream raises it too: RuntimeError", "worse"),  # hybrid's bits
    ([2.0, 1.0], "sliding_window, hybrid", "", "worse"),        # upstream did not raise on it: a skipped call
    ([1.0, 2.0], "hybrid, static", "sliding_window: raises", "worse"),  # not the call upstream raised on
])
def test_a_call_upstream_raises_on_answered_right_is_a_correction(ours_outputs, ours_caches, loud, verdict):
    """cache-implementations lists the implementations upstream raises on and goes on with the others (4.49's
    Gemma-2 with 'sliding_window'): answering that call right, every other call bitwise upstream's, corrects."""
    import torch

    from hf_genfix.oracles.differential import Observation, compare

    def obs(outputs, caches, unsupported):
        return Observation("pass", "m", None, figures={"caches": caches, "unsupported": unsupported},
                           outputs=[{"call": "generate", "sequences": torch.tensor([x])} for x in outputs])

    upstream = obs([1.0], "hybrid", loud)
    assert compare(upstream, obs(ours_outputs, ours_caches, ""))[0] == verdict


def test_summary_line():
    from hf_genfix.oracles.differential import summary_line, tally

    line = summary_line(tally(["identical"] * 3 + ["corrected", "same-exception", "skipped"]))
    assert line == "5 scenarios: 3 identical, 1 corrected, 1 same-exception, 0 worse (1 more cannot run here)"


def test_recording_keeps_the_signature_and_leaves_no_trace():
    import inspect

    import torch

    from hf_genfix.oracles import tiny_model
    from hf_genfix.oracles.differential import observe, recording

    model = tiny_model("llama")
    before = inspect.signature(model.forward)
    outputs = []
    with recording(model, outputs, forward=True):
        assert inspect.signature(model.forward) == before
        with torch.no_grad():
            model.generate(torch.tensor([[5, 6, 7]]), max_new_tokens=2, do_sample=False,
                           return_dict_in_generate=True, output_scores=True)
    assert "generate" not in vars(model) and "forward" not in vars(model)
    calls = [o["call"] for o in outputs]
    assert calls.count("generate") == 1 and calls.count("forward") == 2
    record = outputs[-1]
    assert record["sequences"].shape == (1, 5) and len(record["scores"]) == 2 and record["cache_length"] == 4

    def caught(subject):
        try:
            {}["x"]
        except KeyError as exc:
            from hf_genfix.oracles import DefectObserved

            raise DefectObserved("the oracle re-raises it") from exc

    obs = observe(caught, None)
    assert (obs.outcome, obs.error, obs.caught) == ("raised", "KeyError", True)


def test_threads_and_forks_are_never_worse_than_upstream(capsys):
    # The process scenarios (hf_genfix.oracles.concurrency): a remote from_pretrained in one thread while another
    # builds seeded models; a fork while another thread holds hf_genfix's lock. Both were worse before issue 23.
    import hf_genfix
    from hf_genfix.oracles import concurrency, differential

    registry = hf_genfix._activation.registry()
    verdicts = concurrency.run_differential(registry)
    counts = differential.tally([v["verdict"] for v in verdicts.values()])
    with capsys.disabled():
        print(f"\nprocess scenarios: {differential.summary_line(counts)}")
    worse = [f"{name}: {v['detail']}" for name, v in verdicts.items() if v["verdict"] == differential.WORSE]
    assert not worse, "hf_genfix is worse than upstream:\n" + "\n".join(worse)
    assert set(verdicts) == set(concurrency.SCENARIOS)


def test_each_run_starts_without_the_static_cache_an_earlier_call_left_on_the_model():
    """generate() reuses the static cache it keeps on the model (``_cache``): the first run of a pair must not leave
    the second one a half-built cache (5.0.0 xglm: ValueError upstream, then AttributeError "worse")."""
    import hf_genfix
    from hf_genfix.oracles import differential

    class Model:
        def generate(self):
            if hasattr(self, "_cache"):
                raise AttributeError("'StaticLayer' object has no attribute 'max_batch_size'")
            self._cache = object()  # built, then the call fails
            raise ValueError("Incorrect 4D attention_mask shape")

    model = Model()
    pair = differential.differential(hf_genfix._activation.registry(), lambda subject: model.generate(), None, (model,))
    assert pair["verdict"] == differential.SAME_EXCEPTION, pair["detail"]


@pytest.mark.parametrize("changed, verdict", [
    ({"model-qwen2-vl-vision-positions": 2}, "corrected"),  # its evidence names the probe's oracle: the definition
    ({"model-qwen2-vl-vision-positions": 2, "model-qwen2-vl-rope-deltas": 1}, "worse"),  # another patch changed too
    ({"model-qwen2-vl-rope-deltas": 1}, "worse"),  # judged by the no-cache oracle: equality is owed
    ({}, "worse"),  # nothing says who changed the output
    ({"no-such-patch": 1}, "worse"),
])
def test_a_patch_whose_defect_the_oracle_shares_owns_its_difference(changed, verdict):
    from hf_genfix.oracles.differential import compare

    upstream, ours = _obs("pass", 1.0), _obs("pass", 1.5)
    ours.changed = changed
    assert compare(upstream, ours)[0] == verdict


@pytest.mark.parametrize("upstream_later, verdict", [("wrong", "unchanged"), ("right", "worse")])
def test_a_corrected_first_turn_before_a_later_wrong_one(upstream_later, verdict):
    """A scenario of two stages: upstream's first turn is wrong (the scenario stops there); hf_genfix's is right and
    its second turn wrong. Their outputs differ by construction: not worse where upstream, run on past its wrong
    first turn, is wrong at the second turn too; worse where that second turn is right without hf_genfix."""
    import torch

    import hf_genfix
    from hf_genfix.oracles import DefectObserved, differential
    from hf_genfix.oracles.outcome import earlier_stage

    class Model:
        def __init__(self):
            self.calls = 0

        def generate(self):
            self.calls += 1
            return torch.tensor([[self.calls]])

    model, runs = Model(), []

    def scenario(subject):
        runs.append(1)
        run = len(runs)
        model.generate()
        with earlier_stage():
            if run != 2:  # runs 1 and 3 are upstream's (the third past its earlier stages); run 2 is hf_genfix's
                raise DefectObserved("first turn: row 0, step 0", max_logit_diff=1.0)
        model.generate()
        if run == 3 and upstream_later == "right":
            return {"max_logit_diff": 0.0}
        raise DefectObserved("second turn: row 0, step 0", max_logit_diff=2.0)

    pair = differential.differential(hf_genfix._activation.registry(), scenario, None, (model,))
    assert pair["upstream"].figures.get("stage") == "earlier" and "stage" not in pair["ours"].figures
    assert pair["verdict"] == verdict, pair["detail"]


def test_every_part_runs_and_the_finding_names_them():
    """``outcome.run_parts``: a wrong part does not stop the others; the finding lists the wrong and passing parts
    (what ``compare`` judges run by run); a crash comes after a silent error."""
    from hf_genfix.oracles.outcome import DefectObserved, current_part, run_parts

    seen = []

    def run(name):
        seen.append(current_part())
        if name in ("a", "c"):
            raise DefectObserved(f"{name} wrong", max_logit_diff=1.0)
        if name == "d":
            raise RuntimeError("d crashed")
        return {"max_logit_diff": 0.0}

    with pytest.raises(DefectObserved) as caught:
        run_parts(["a", "b", "c"], run)
    assert seen == ["a", "b", "c"] and current_part() is None
    assert caught.value.figures["wrong_parts"] == "a,c" and caught.value.figures["passed_parts"] == "b"
    with pytest.raises(DefectObserved) as caught:
        run_parts(["d", "a"], run)
    assert caught.value.figures["crashed_parts"] == "d"
    with pytest.raises(RuntimeError):
        run_parts(["b", "d"], run)
    assert run_parts(["b"], run) == [{"max_logit_diff": 0.0}]


def test_a_run_that_reads_no_switch_is_its_own_upstream(monkeypatch):
    """``differential`` takes hf_genfix's observation as upstream's only where the run read no patch's switch (no
    wrapper entered, no ``on()`` asked): ``disabled()`` changes nothing else. A run that enters a wrapper, or asks
    ``on()``, is run again inside ``disabled()``; an observation nobody watched is never taken for upstream's."""
    import sys
    import types

    import hf_genfix
    from hf_genfix._patcher import Patcher
    from hf_genfix.oracles import differential
    from hf_genfix.toolkit import recorder

    module = types.ModuleType("_genfix_same_code_target")
    module.plain = lambda: 1
    module.patched = lambda: 1
    module.through = lambda x=0: 1 + x
    monkeypatch.setitem(sys.modules, module.__name__, module)
    patcher = Patcher("same-code-test", (f"{module.__name__}:patched", f"{module.__name__}:through"))
    patcher.wrap(f"{module.__name__}:patched", lambda wrapped, instance, args, kwargs: wrapped(*args, **kwargs) + 1)
    record = recorder("same-code-test")

    def through(wrapped, instance, args, kwargs):
        # Calls through when given nothing or a keyword (both forms of saying so); changes the call when given x.
        if args:
            return wrapped(args[0] + 1)
        if kwargs:
            return record.through(wrapped, args, kwargs)
        record.unchanged()
        return wrapped(*args, **kwargs)

    patcher.wrap(f"{module.__name__}:through", through)
    registry = hf_genfix._activation.registry()
    calls = []

    def scenario(call):
        def run(_subject):
            calls.append(call.__name__)
            return {"value": call()}
        run.__name__ = call.__name__
        return run

    def asks_on():
        return 2 if patcher.on() else 1

    try:
        for call, reached, runs in ((module.plain, frozenset(), 1),
                                    (lambda: module.patched(), frozenset({"same-code-test"}), 2),
                                    (asks_on, frozenset({"same-code-test"}), 2),
                                    # A wrapper that calls straight through reached nothing, every time it does.
                                    (lambda: module.through() + module.through() - 1, frozenset(), 1),
                                    (lambda: module.through(x=0) * module.through(), frozenset(), 1),
                                    # One call through and one changed: the changed one is a read that counts.
                                    (lambda: module.through() + module.through(0) - 1, frozenset({"same-code-test"}),
                                     2)):
            calls.clear()
            ours = differential.observe(scenario(call), None)
            assert ours.reached == reached
            pair = differential.differential(registry, scenario(call), None, ours=ours)
            assert len(calls) == runs and pair["same_code"] == (runs == 1)
            assert pair["upstream"].figures == {"value": 1}  # upstream's own answer either way
            assert ours.figures == {"value": 1 if runs == 1 else 2}
        unwatched = differential.Observation(differential.PASS, figures={"value": 1})
        calls.clear()
        assert not differential.differential(registry, scenario(module.plain), None, ours=unwatched)["same_code"]
        assert len(calls) == 1
    finally:
        patcher.undo()


def test_the_generate_wrappers_that_leave_a_call_alone_reach_nothing():
    """The wrappers entered by every ``generate()`` (right-padding and decoding-given-cache-use-cache on
    ``generate``, the logits-processor and stopping-criteria factories, ``_prefill``) say so where they leave the
    call as the caller made it (a left-padded batch, no cache given, no processor that reads the ids): the run
    reached none of them, so the sweep's differential need not run it again; where they change it, it reached
    them."""
    import torch

    import hf_genfix
    from hf_genfix import _patcher
    from hf_genfix.oracles import tiny_model

    model = tiny_model("llama")
    ids = torch.tensor([[0, 0, 5, 6, 7], [4, 5, 6, 7, 8]])
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    generate = {"max_new_tokens": 3, "do_sample": False, "pad_token_id": 0}
    wrappers = {"right-padding", "decoding-given-cache-use-cache", "decoding-processor-padding",
                "decoding-inputs-embeds-penalty", "decoding-unprepared-config", "decoding-seq2seq-continuation",
                "decoding-image-prefill-chunks", "decoding-image-prefill-chunks-bidirectional"}
    with _patcher.watching() as left:
        model.generate(ids, attention_mask=mask, **generate)
    assert not left & wrappers
    right = (ids.roll(-2, dims=1) * mask.roll(-2, dims=1), mask.roll(-2, dims=1))
    with _patcher.watching() as realigned:
        model.generate(right[0], attention_mask=right[1], **generate)
    states = {p.id: p.state for p in hf_genfix.status()}
    if states.get("right-padding") == "applied":
        assert "right-padding" in realigned
    with _patcher.watching() as penalised:
        model.generate(ids, attention_mask=mask, no_repeat_ngram_size=1, **generate)
    if states.get("decoding-processor-padding") == "applied":
        assert "decoding-processor-padding" in penalised  # each row is given the processor without its padding


@pytest.mark.parametrize("model_type, wrappers", [
    ("mamba", {"model-mamba-continuation", "decoding-assisted-recurrent-history"}),
    ("jamba", {"model-jamba-chunk-state", "decoding-assisted-recurrent-history"}),
    ("mistral", {"sliding-window-dynamic-full", "sliding-window-rollback-cache", "sliding-window-kv-shared-zero"}),
    ("gemma3_text", {"sliding-window-image-mask-gemma3", "sliding-window-dynamic-full",
                     "sliding-window-kv-shared-zero"}),
])
def test_the_model_wrappers_that_leave_a_call_alone_reach_nothing(model_type, wrappers):
    """The wrappers entered at every step (or every cache) of a model family's ``generate()``: the state-space
    models' mixers, backbones and recurrent-state window, and the sliding-window models' cache preparation, cache
    construction and Gemma-3's mask builders. A plain greedy run (a prompt, one-token steps, no draft, no image) is
    upstream's, and they say so: the run reached none of them (on the releases where they are installed).
    ``generate(inputs_embeds=...)`` without a repetition penalty does not reach decoding-inputs-embeds-penalty
    either."""
    import torch

    from hf_genfix import _patcher
    from hf_genfix.oracles import tiny_model

    try:
        model = tiny_model(model_type)
    except Exception as exc:  # noqa: BLE001 - a release without the model, or whose tiny config cannot build
        pytest.skip(f"{model_type}: {exc}")
    ids = torch.tensor([[5, 6, 7, 8, 9, 10]])
    generate = {"max_new_tokens": 3, "do_sample": False, "pad_token_id": 0}
    with _patcher.watching() as reached:
        model.generate(ids, attention_mask=torch.ones_like(ids), **generate)
    assert not reached & wrappers, reached
    embeds = model.get_input_embeddings()(ids)
    with _patcher.watching() as reached:
        model.generate(inputs_embeds=embeds, attention_mask=torch.ones_like(ids), **generate)
    assert "decoding-inputs-embeds-penalty" not in reached, reached


def test_each_run_starts_without_the_static_cache_length_of_earlier_calls():
    """From 5.15 generate() sizes a new static cache to the longest an earlier call on the model asked for
    (``_previous_max_cache_length``): a run must not inherit it from the run before (hf_genfix's, then upstream's),
    or their static caches differ in length and their logits by rounding (5.16.0: 164 pairs read as worse)."""
    pytest.importorskip("torch")
    from hf_genfix.oracles import differential, tiny_model

    model = tiny_model("llama")
    seen = []

    def scenario(_subject):
        seen.append(vars(model).get("_previous_max_cache_length"))
        model._previous_max_cache_length = 64  # what a static-cache generate() leaves
        return {}

    differential.observe(scenario, None, (model,))
    differential.observe(scenario, None, (model,))
    assert seen == [None, None]
