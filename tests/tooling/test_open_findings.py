"""patches/open-findings.json: a silently wrong upstream path on file is listed as open, never as a pass, and only
upstream's own failure can be open (a run hf_genfix makes worse still fails the sweep)."""

from __future__ import annotations

import fnmatch
import json

from hf_genfix._registry import in_range
from hf_genfix.oracles import sweep


def test_every_record_names_a_scenario_a_range_and_what_is_known():
    records = sweep.open_findings()
    assert records, "patches/open-findings.json holds no record"
    for record in records:
        # a scenario's name, or a glob that names at least one (Zamba2's every cached path before 5.16)
        assert fnmatch.filter(sweep.SCENARIOS, record["scenario"]), record
        assert in_range(record["affected"], "0.0.1") is not None  # a valid specifier
        assert len(record["what"]) > 40 and record["found"]


def test_lookup_follows_scenario_model_type_and_release(tmp_path, monkeypatch):
    (tmp_path / "open-findings.json").write_text(json.dumps({"findings": [
        {"scenario": "cached", "arch": "gemma*", "affected": ">=5.23.0", "what": "x" * 50, "found": "here"}]}))
    monkeypatch.setattr("hf_genfix.catalog.manifest_dir", lambda: str(tmp_path))
    assert sweep.open_finding("cached", "gemma4", "5.24.0")["found"] == "here"
    assert sweep.open_finding("cached", "gemma4", "5.22.0") is None
    assert sweep.open_finding("cached", "llama", "5.24.0") is None
    assert sweep.open_finding("uncached", "gemma4", "5.24.0") is None
    assert sweep.open_finding("cached", "gemma4", None) is None


def test_an_open_finding_is_listed_and_does_not_fail_the_sweep_but_worse_still_does():
    finding = {"arch": "gemma4", "scenario": "cached", "kind": "defect", "verdict": sweep.OPEN, "step": 0,
               "row": 1, "max_logit_diff": 1.86, "message": "m", "cause": "open finding: what", "explained_by": None,
               "summary": "", "catalog_wrong": False}
    report = {"architectures": {}, "scenarios": ["cached"], "seconds": 1.0, "not_buildable": [], "not_reached": [],
              "unknown": [], "known": [finding], "unsupported": [], "suspect": []}
    assert not sweep.failed(report)
    assert sweep.counts_of(report)["open"] == 1 and sweep.counts_of(report)["known"] == 0
    text = sweep.render_text(report)
    assert "OPEN (on file, not patched): gemma4 / cached" in text and "1 open" in text
    report["unknown"] = [dict(finding, verdict=sweep.WORSE)]
    assert sweep.failed(report)
