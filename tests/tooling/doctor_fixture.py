"""The doctor fixture for the tooling tests: a registry built from fixture manifests whose fake probes behave on purpose.

The fixture "defect" is a method that answers 41 where 42 is right; the fixes wrap it. Each case pairs a range
(always / never affected) with a fix and a probe, and the verdict ``hf-genfix doctor`` must reach.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from hf_genfix._config import Config
from hf_genfix._manifest import load_dir
from hf_genfix._registry import Registry

PKG = "genfix_doctor_fixture"

TARGET = '''
class Thing:
    def answer(self):
        return 41

    def other(self):
        return 41
'''

FIXES = '''
from hf_genfix.oracles import DefectObserved, ProbeSkipped
from genfix_doctor_fixture.target import Thing

def install(patcher):
    patcher.wrap("genfix_doctor_fixture.target:Thing.answer", lambda wrapped, inst, a, kw: wrapped(*a, **kw) + 1)

def install_other(patcher):
    patcher.wrap("genfix_doctor_fixture.target:Thing.other", lambda wrapped, inst, a, kw: wrapped(*a, **kw) + 1)

def install_useless(patcher):
    patcher.wrap("genfix_doctor_fixture.target:Thing.answer", lambda wrapped, inst, a, kw: wrapped(*a, **kw))

def probe():
    got = Thing().answer()
    if got != 42:
        raise DefectObserved(f"answer is {got}, not 42", answer=got, max_logit_diff=float(42 - got))
    return {"answer": got}

def probe_other():
    got = Thing().other()
    if got != 42:
        raise DefectObserved(f"other is {got}, not 42")
    return {"other": got}

def probe_skip():
    raise ProbeSkipped("this scenario does not exist here")

def probe_broken():
    return {}["missing"]
'''


def manifest(pid: str, affected: str, fix: str = "install", probe: str = "probe") -> str:
    return textwrap.dedent(f'''\
        id = "{pid}"
        summary = "fixture {pid}"
        family = "test"
        targets = ["{PKG}.target:Thing.answer", "{PKG}.target:Thing.other"]
        affected = "{affected}"
        fix = "{PKG}.fixes:{fix}"
        probe = "{PKG}.fixes:{probe}"
        [evidence]
        scenario = "fixture"
        observed = "fixture"
        ''')


ALWAYS, NEVER = ">=0", "<0.0.1"

CASES = {
    # id: (affected, fix, probe, expected verdict, expected state)
    "fixed-here": (ALWAYS, "install", "probe", "fixed", "applied"),
    "unaffected-but-defect": (NEVER, "install_other", "probe_other", "catalog-wrong", "not-needed"),
    "useless-fix": (ALWAYS, "install_useless", "probe", "not-fixed", "applied"),
    "skipped-here": (ALWAYS, "install_other", "probe_skip", "skipped", "applied"),
    "broken-probe": (NEVER, "install", "probe_broken", "probe-error", "not-needed"),
}


@pytest.fixture
def make_registry(tmp_path, monkeypatch):
    pkg = tmp_path / PKG
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "target.py").write_text(TARGET)
    (pkg / "fixes.py").write_text(FIXES)
    monkeypatch.syspath_prepend(str(tmp_path))
    made: list[Registry] = []

    def build(*ids: str) -> Registry:
        mdir = tmp_path / f"manifests{len(made)}"
        mdir.mkdir()
        for pid in ids:
            affected, fix, probe, _, _ = CASES[pid]
            (mdir / f"{pid}.toml").write_text(manifest(pid, affected, fix, probe))
        registry = Registry(load_dir(mdir), Config())
        registry.activate()
        made.append(registry)
        return registry

    yield build
    for registry in made:
        registry.revert()
    for name in [m for m in sys.modules if m == PKG or m.startswith(PKG + ".")]:
        del sys.modules[name]
