"""The per-call record: off by default; ``hf_genfix.recording()`` and ``HF_GENFIX_LOG=debug`` give one line per call
a patch changed and counters in ``status()``, and record nothing for calls a patch leaves alone."""

from __future__ import annotations

import json

import pytest

from conftest import run_python

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix import _record  # noqa: E402
from hf_genfix.doctor import import_targets  # noqa: E402
from hf_genfix.oracles import left_pad, right_pad, tiny_model  # noqa: E402

ROWS = [[5, 6, 7, 8, 9], [10, 11, 12], [13, 14, 15, 16, 17, 18, 19], [20, 21]]


@pytest.fixture(scope="module")
def model():
    import_targets()
    if {s.id: s.state for s in hf_genfix.status()}.get("right-padding") != "applied":
        pytest.skip("right-padding is not installed on this release")
    return tiny_model("llama")


def _generate(model, ids, mask, new=2):
    with torch.no_grad():
        return model.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=new, pad_token_id=0)


def test_off_by_default_and_nothing_counted(model):
    assert _record.on is False
    before = {s.id: (s.calls_seen, s.calls_changed) for s in hf_genfix.status()}
    _generate(model, *right_pad(ROWS))
    assert {s.id: (s.calls_seen, s.calls_changed) for s in hf_genfix.status()} == before


def test_recording_says_what_each_patch_changed(model):
    with hf_genfix.recording() as rec:
        assert _record.on is True
        _generate(model, *right_pad(ROWS))
        _generate(model, *left_pad(ROWS))  # seen, left alone
    assert _record.on is False
    # Rows 0, 1 and 3 are shorter than the longest (row 2): their trailing pads move to the front.
    assert rec.lines == ["right-padding: realigned 3 of 4 rows"]
    assert rec.counts["right-padding"] == (2, 1)
    seen, changed = rec.counts["prepare-inputs"]
    assert seen >= 2 and changed == 0  # generate()'s own calls are passed through
    status = {s.id: s for s in hf_genfix.status()}
    assert (status["right-padding"].calls_seen, status["right-padding"].calls_changed) >= (2, 1)


def test_a_hand_written_loop_is_recorded_by_prepare_inputs(model):
    ids, mask = left_pad(ROWS[:2])
    with hf_genfix.recording() as rec, torch.no_grad():
        out = model(**model.prepare_inputs_for_generation(ids, attention_mask=mask, use_cache=True))
        step = torch.cat([ids, out.logits[:, -1:].argmax(-1)], -1)
        grown = torch.cat([mask, torch.ones_like(mask[:, :1])], -1)
        model.prepare_inputs_for_generation(step, past_key_values=out.past_key_values, attention_mask=grown)
    fed = [line for line in rec.lines if line.startswith("prepare-inputs: fed 1 of 6 ids")]
    assert fed, rec.lines


@pytest.mark.slow
def test_log_debug_records_the_whole_process():
    proc = run_python("""
        import json, torch, hf_genfix
        from hf_genfix.doctor import import_targets
        from hf_genfix.oracles import right_pad, tiny_model
        import_targets()
        model = tiny_model("llama")
        ids, mask = right_pad([[5, 6, 7], [8, 9]])
        with torch.no_grad():
            model.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=1, pad_token_id=0)
        s = {r.id: [r.calls_seen, r.calls_changed] for r in hf_genfix.status()}
        print(json.dumps(s["right-padding"]))
    """, env={"HF_GENFIX_LOG": "debug", "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == [1, 1]
    assert "DEBUG hf_genfix: right-padding: realigned 1 of 2 rows" in proc.stderr.splitlines()
