"""``hf-genfix upgrade-check``: the comparison and summary logic on fake doctor / scenario / JUnit results, the
command line, the environment's links, and (marked slow, run with ``-m slow``) one real check of 4.57.6 from the
release this interpreter runs, compared with the scenarios run by hand in both environments."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hf_genfix import upgrade
from hf_genfix.upgrade_scenarios import SCENARIOS


def _patch(pid, state, without="pass", verdict=None, affected=">=1", targets=()):
    verdict = verdict or ("fixed" if without == "defect" and state == "applied" else "not-needed")
    return {"id": pid, "state": state, "affected": affected, "verdict": verdict, "message": "m",
            "without": {"outcome": without}, "with": {"outcome": "pass"},
            "targets": [{"target": t, "exists": True, "signature": s} for t, s in targets]}


NOW = {"transformers": "4.57.6", "patches": [
    _patch("still", "applied", "defect", targets=[("m:f", "(a, b)")]),
    _patch("new-there", "not-needed"),
    _patch("fixed-there", "applied", "defect"),
    _patch("old-there", "applied", "defect"),
    _patch("grows", "not-needed"),
    _patch("broken", "applied", "defect"),
    _patch("quiet", "not-needed"),
]}
THERE = {"transformers": "5.24.0", "patches": [
    _patch("still", "applied", "defect", targets=[("m:f", "(a, b, c)")]),
    _patch("new-there", "applied", "defect"),
    _patch("fixed-there", "not-needed"),
    _patch("old-there", "not-needed"),
    _patch("grows", "not-needed", "defect", verdict="catalog-wrong", affected="<5.0"),
    _patch("broken", "applied", "defect", verdict="not-fixed"),
    _patch("quiet", "not-needed"),
]}


def test_each_patch_gets_what_changes_for_it():
    rows = {r["id"]: r for r in upgrade.judging.compare_patches(NOW, THERE, {"fixed-there": ("5.1.0",)})}
    assert {pid: r["change"] for pid, r in rows.items()} == {
        "still": "still present", "new-there": "applies there", "fixed-there": "upstream fixed there",
        "old-there": "not needed there", "grows": "range must grow", "broken": "broken there",
        "quiet": "unchanged"}
    assert {pid for pid, r in rows.items() if r["unexplained"]} == {"grows", "broken"}
    assert "fixed upstream in 5.1.0" in rows["fixed-there"]["notes"]
    assert any("signature drift" in n and "(a, b, c)" in n for n in rows["still"]["notes"])


def test_a_fix_newer_than_the_candidate_is_not_called_upstream_fixed():
    rows = {r["id"]: r for r in upgrade.judging.compare_patches(NOW, THERE, {"fixed-there": ("5.30.0",)})}
    assert rows["fixed-there"]["change"] == "not needed there"


def _run(tokens, scores):
    return {"tokens": tokens, "scores": scores}


def test_scenarios_are_identical_differ_or_fail():
    a = _run([[1, 2, 3, 4]], [[[0.0, 1.0]], [[0.5, 0.2]]])
    assert upgrade.judging.compare_scenario(a, json.loads(json.dumps(a)))["result"] == "identical"
    b = _run([[1, 2, 3, 5]], [[[0.0, 1.0]], [[0.5, 0.7]]])
    c = upgrade.judging.compare_scenario(a, b)
    assert c["result"] == "differs" and c["first_step"] == 1 and c["max_logit_diff"] == pytest.approx(0.5)
    same_tokens = upgrade.judging.compare_scenario(a, _run([[1, 2, 3, 4]], [[[0.0, 1.0]], [[0.5, 0.21]]]))
    assert same_tokens["result"] == "differs" and same_tokens["tokens_identical"]
    assert upgrade.judging.compare_scenario(a, _run([[1, 2, 3, 4]], [[[0.0, 1.0]], [[0.5, 0.20001]]]))["result"] == \
        "identical"  # below LOGIT_TOL: the same computation, reordered
    inf = _run([[1, 2, 3, 4]], [[[float("-inf"), 1.0]], [[0.5, 0.2]]])
    assert upgrade.judging.compare_scenario(inf, json.loads(json.dumps(inf)))["result"] == "identical"
    shapes = upgrade.judging.compare_scenario(a, _run([[1, 2, 3, 4]], [[[0.0, 1.0]]]))
    assert shapes["result"] == "differs" and shapes["max_logit_diff"] is None  # JSON has no infinity
    assert "incomparable" in upgrade.rendering._describe(shapes)
    fails = upgrade.judging.compare_scenario(a, {"error": "ValueError: x"})
    assert fails == {"result": "fails", "side": "there", "error": "ValueError: x"}
    assert upgrade.judging.compare_scenario({"error": "e"}, {"error": "f"})["result"] == "fails on both"


def _model_runs(there_tokens, states_now, states_there):
    good = {name: _run([[1, 2, 3]], [[[0.0]]]) for name in SCENARIOS}
    there = dict(good, **there_tokens)
    return {"now-on": {"scenarios": good, "patches": states_now},
            "now-off": {"scenarios": good, "patches": {}},
            "there-on": {"scenarios": there, "patches": states_there},
            "there-off": {"scenarios": there, "patches": {}}}


def test_a_difference_is_explained_only_by_a_patch_of_its_family_whose_state_changes():
    families = {"right-padding": "padding", "drafting-x": "drafting", "legacy-cache": "prepare-inputs"}
    runs = _model_runs({"greedy-batch-right": _run([[1, 2, 4]], [[[0.0]]]),
                        "beam": _run([[1, 2, 4]], [[[0.0]]])},
                       {"right-padding": "applied", "drafting-x": "not-needed", "legacy-cache": "applied"},
                       {"right-padding": "not-needed", "drafting-x": "applied", "legacy-cache": "applied"})
    rows = {r["scenario"]: r for r in upgrade.judging.compare_models({"m": runs}, families)}
    assert rows["greedy-batch-right"]["explained_by"] == ["right-padding"]  # padding family, state changed
    assert rows["beam"]["explained_by"] == [] and rows["beam"]["unexplained"]  # drafting is not beam's family
    assert rows["greedy"]["with"]["result"] == "identical" and not rows["greedy"]["unexplained"]
    summary = upgrade.judging.summarize("5.24.0", "4.57.6", upgrade.judging.compare_patches(NOW, NOW), list(rows.values()), None)
    assert summary["identical"] == len(SCENARIOS) - 2 and summary["differ"] == 2 and summary["unexplained"] == 1
    assert summary["lines"][1] == f"  model m: {len(SCENARIOS) - 2} of {len(SCENARIOS)} scenarios identical with " \
                                  "hf_genfix, 2 differ (1 unexplained)"
    assert summary["unsafe"]


def _tests(now, there, regs=()):
    return {"now": now, "there": there, "output_now": [], "exit_now": 0,
            "regressions": [{"id": t, "there": there.get(t, "missing"), "error": "TypeError: x", "lines": ["E   TypeError: x"],
                             "rerun": f"cd /p && /env/bin/python -m hf_genfix run -- /env/bin/python -m pytest {t}"}
                            for t in regs]}


def test_the_summary_comes_first_and_says_what_to_decide():
    patches = upgrade.judging.compare_patches(NOW, THERE)
    tests = _tests({"t.py::a": "passed", "t.py::b": "passed"}, {"t.py::a": "passed", "t.py::b": "failed"},
                   ["t.py::b"])
    s = upgrade.judging.summarize("5.24.0", "4.57.6", patches, None, tests, {"still": 12})
    assert s["lines"][0] == "upgrade to 5.24.0 (from 4.57.6)"
    assert s["lines"][1:4] == ["  your tests: 1 regression (2 of 2 pass on 4.57.6; 2 run on 5.24.0)",
                               "    t.py::b: TypeError: x",
                               "  patches your tests go through on 5.24.0: still (12 calls)"]
    assert s["lines"][4].startswith("  hf_genfix on 5.24.0: 3 patches apply (2 not called by what was run here); "
                                    "2 need a decision: grows (range must grow), broken (broken there)")
    assert s["unsafe"] and s["patches_unexplained"] == ["grows", "broken"] and s["verdict"] == "unsafe"
    result = {"from": "4.57.6", "to": "5.24.0", "summary": s, "patches": patches, "models": None, "tests": tests}
    text = upgrade.rendering.render(result)
    assert text.startswith("upgrade to 5.24.0") and "grows: range must grow [UNEXPLAINED]" in text
    assert "      E   TypeError: x" in text and "rerun there: cd /p && /env/bin/python -m hf_genfix run" in text
    assert "still: still present" in text  # the patch the tests go through
    assert "quiet" not in text and "new-there" not in text and "signature drift" not in text  # --verbose only
    verbose = upgrade.rendering.render(result, verbose=True)
    assert "quiet: unchanged" in verbose and "signature drift" in verbose and "new-there: applies there" in verbose
    calm = upgrade.judging.summarize("5.24.0", "4.57.6", upgrade.judging.compare_patches(NOW, NOW), [], None)
    assert not calm["unsafe"] and calm["lines"][-1] == "verdict: nothing unexplained changed"


@pytest.mark.parametrize("argv, message", [
    ([], "required"),
    (["5.24.0", "--model", "/no/such/folder"], "no such folder"),
    (["5.24.0", "--", "make", "test"], "pytest ARGS"),
    (["5.24.0", "--colour"], "unrecognized"),
])
def test_usage_errors_exit_2(argv, message, capsys):
    assert upgrade.main(argv) == 2
    assert message in capsys.readouterr().err


def test_the_cli_dispatches_upgrade_check(capsys):
    from hf_genfix import cli

    assert cli.main(["upgrade-check"]) == 2
    assert cli.main(["upgrade-check", "--help"]) == 0
    assert "--model PATH" in capsys.readouterr().out


def test_the_environment_gets_torch_but_not_this_transformers(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    linked = upgrade.environment.link_distributions(upgrade.environment.shared_distributions(), tmp_path)
    assert "torch" in linked and "transformers" not in linked and "hf_genfix" not in linked
    assert not any(name.startswith("transformers-") for name in linked)
    assert (tmp_path / "torch").resolve() == Path(__import__("torch").__file__).resolve().parent


# -- end to end ---------------------------------------------------------------------------------------------------
HAND = r"""
import json, sys, torch, transformers
model = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1]).float().eval()
rows = json.loads(sys.argv[2])
out = {}
for name, ids, mask, extra in rows:
    r = model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=8,
                       do_sample=False, pad_token_id=0, **extra)
    out[name] = r.tolist()
print(json.dumps(out))
"""


@pytest.mark.slow
def test_upgrade_check_of_a_real_release_agrees_with_running_it_by_hand(tmp_path, request):
    """From this interpreter's release, check 4.57.6 on a tiny Llama saved to disk; the verdicts of the greedy
    scenarios must match generate() called by hand in both environments (with HF_GENFIX=off and with it on)."""
    if "slow" not in (request.config.option.markexpr or ""):
        pytest.skip("builds an environment with transformers 4.57.6 (pip, minutes): run with -m slow")
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    if transformers.__version__ == "4.57.6":
        pytest.skip("this interpreter already runs 4.57.6")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, bos_token_id=1, eos_token_id=2,
                                   pad_token_id=0)
    ckpt = tmp_path / "tiny-llama"
    transformers.LlamaForCausalLM(cfg).save_pretrained(ckpt)
    cache = Path(tempfile.gettempdir()) / "hf-genfix-upgrade-test-envs"  # kept: a second run is warm
    proc = subprocess.run([sys.executable, "-m", "hf_genfix", "upgrade-check", "4.57.6", "--model", str(ckpt),
                           "--json", "--cache-dir", str(cache)], capture_output=True, text=True, timeout=1200)
    if proc.returncode == 2 and "pip" in proc.stderr:
        pytest.skip(f"cannot install transformers 4.57.6 here: {proc.stderr[-300:]}")
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert "upgrade-check: environment for transformers 4.57.6" in proc.stderr  # progress per stage
    assert result["summary"]["lines"][0].startswith(f"upgrade to 4.57.6 (from {transformers.__version__})")
    rows = {r["scenario"]: r for r in result["models"]}
    assert set(rows) == set(SCENARIOS)
    assert result["summary"]["identical"] == sum(r["with"]["result"] == "identical" for r in rows.values())

    # By hand: the same prompts (upgrade_scenarios draws them with a fixed seed) in both interpreters.
    from hf_genfix.upgrade_scenarios import _prompts

    long, short = _prompts(128, {0, 1, 2})
    pad = lambda p, side: [0] * (7 - len(p)) + p if side == "left" else p + [0] * (7 - len(p))  # noqa: E731
    mask = lambda p, side: ([0] * (7 - len(p)) + [1] * len(p)) if side == "left" else \
        ([1] * len(p) + [0] * (7 - len(p)))  # noqa: E731
    cases = [["greedy", [long], [[1] * 7], {}],
             ["greedy-batch-left", [pad(long, "left"), pad(short, "left")],
              [mask(long, "left"), mask(short, "left")], {}],
             ["greedy-batch-right", [pad(long, "right"), pad(short, "right")],
              [mask(long, "right"), mask(short, "right")], {}],
             ["beam", [long], [[1] * 7], {"num_beams": 3}]]
    env_python = Path(result["environment"]) / "bin" / "python"
    for genfix, column in (("on", "with"), ("off", "without")):
        by_hand = {}
        for label, python in (("now", sys.executable), ("there", str(env_python))):
            code = HAND if genfix == "off" else "import hf_genfix\n" + HAND
            env = upgrade.environment.quiet_env(python, {"HF_GENFIX": genfix})
            out = subprocess.run([python, "-c", code, str(ckpt), json.dumps(cases)], capture_output=True,
                                 text=True, env=env, timeout=600)
            assert out.returncode == 0, out.stderr[-2000:]
            by_hand[label] = json.loads(out.stdout.strip().splitlines()[-1])
        for name, *_ in cases:
            same = by_hand["now"][name] == by_hand["there"][name]
            verdict = rows[name][column]
            assert same == (verdict["result"] == "identical" or verdict.get("tokens_identical", False)), \
                (name, column, verdict, by_hand)


def test_hf_genfix_reaches_the_environment_as_it_is_installed_here(tmp_path, monkeypatch):
    """A wheel install (manifests in hf_genfix/_patches) is linked; a source checkout (manifests in patches/ next
    to src/) is put on the path, so that its manifests are found; both register the pytest plugin."""
    wheel = tmp_path / "site"
    (wheel / "hf_genfix" / "_patches").mkdir(parents=True)
    (wheel / "hf_genfix" / "_patches" / "verified.json").write_text("{}")  # the catalog's data ships in a wheel
    (wheel / "hf_genfix_pytest").mkdir()
    monkeypatch.setattr(upgrade.environment, "package_roots", lambda: (wheel / "hf_genfix", wheel / "hf_genfix_pytest"))
    links = tmp_path / "links-wheel"
    links.mkdir()
    assert upgrade.environment._link_hf_genfix(tmp_path, links) == []
    assert (links / "hf_genfix").resolve() == wheel / "hf_genfix"
    assert (links / "hf_genfix_pytest").resolve() == wheel / "hf_genfix_pytest"
    info = next(links.glob("hf_genfix-*.dist-info"))
    assert "hf_genfix = hf_genfix_pytest" in (info / "entry_points.txt").read_text()

    source = tmp_path / "checkout" / "src"
    (source / "hf_genfix" / "_patches").mkdir(parents=True)  # in a checkout: the package that reads patches/
    monkeypatch.setattr(upgrade.environment, "package_roots", lambda: (source / "hf_genfix", source / "hf_genfix_pytest"))
    links = tmp_path / "links-source"
    links.mkdir()
    assert upgrade.environment._link_hf_genfix(tmp_path, links) == [str(source)]
    assert not (links / "hf_genfix").exists()


def test_patches_called_in_the_scenario_are_preferred_and_failing_now_only_is_no_risk():
    families = {"right-padding": "padding", "pad-token": "padding"}
    runs = _model_runs({"greedy-batch-right": _run([[1, 2, 4]], [[[0.0]]])},
                       {"right-padding": "applied", "pad-token": "applied"},
                       {"right-padding": "not-needed", "pad-token": "not-needed"})
    runs["now-on"]["scenarios"]["greedy-batch-right"] = dict(runs["now-on"]["scenarios"]["greedy-batch-right"],
                                                             patches_seen=["right-padding"])
    runs["now-on"]["scenarios"]["save-reload"] = {"error": "OSError: x"}
    rows = {r["scenario"]: r for r in upgrade.judging.compare_models({"m": runs}, families)}
    assert rows["greedy-batch-right"]["explained_by"] == ["right-padding"]
    assert rows["save-reload"]["with"]["side"] == "now" and not rows["save-reload"]["unexplained"]
    summary = upgrade.judging.summarize("5.24.0", "4.57.6", [], list(rows.values()), None)
    assert "1 differ (all explained by patches whose state changes), 1 fail now and work there" in \
        summary["lines"][1] and not summary["unsafe"] and not summary["no_evidence"]
