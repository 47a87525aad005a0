"""Import-order harness (after dd-trace-py's tests/contrib/patch.py), on the real transformers installed.

Every order in which a program can meet hf_genfix and transformers must end in the same state per patch, with
nothing wrapped twice, and revert() must give back the identical originals.
"""

from __future__ import annotations

import pytest

from conftest import run_json

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

REPORT = """
import importlib, json, sys
import hf_genfix
from hf_genfix.doctor import import_targets
from hf_genfix._patcher import patch_of
import_targets()
registry = hf_genfix._activation.registry()

def layers(obj, pid):
    n = 0
    while obj is not None:
        n += patch_of(obj) == pid
        obj = getattr(obj, "__wrapped__", None) if patch_of(obj) else None
    return n

def report(**extra):
    out = {"states": {s.id: s.state for s in hf_genfix.status()}, "layers": {}}
    for s in hf_genfix.status():
        for owner, attr, obj in registry.installed(s.id):
            if patch_of(obj) is None:
                continue  # a replaced attribute (e.g. an __init_subclass__ hook), not a wrapper
            key = f"{s.id} {getattr(owner, '__qualname__', owner)}.{attr}"
            out["layers"][key] = layers(vars(owner)[attr], s.id)
    out.update(extra)
    print(json.dumps(out))
"""

TINY = """
from hf_genfix.oracles import tiny_model
model = tiny_model("llama")
"""

ORDERS = {
    "hf_genfix first": "import hf_genfix\nimport transformers\n" + REPORT + "report()",
    "after import transformers": "import transformers\nimport hf_genfix\n" + REPORT + "report()",
    "after the target modules": "import transformers\nfrom hf_genfix.doctor import import_targets\n"
                                "import transformers.generation.utils, transformers.cache_utils\n"
                                + REPORT + "report()",
    "after a model was built": "import transformers\n" + TINY + REPORT
                               + "report(model_class_patched=[s.id for s in hf_genfix.status() "
                                 "if any(isinstance(model, o) for o, a, x in registry.installed(s.id) "
                                 "if isinstance(o, type))])",
    "imported twice and reloaded": "import hf_genfix\nimport hf_genfix\nimport importlib\n"
                                   "importlib.reload(hf_genfix)\n" + REPORT
                                   + "importlib.reload(hf_genfix)\nimport_targets()\nreport()",
    "target modules reloaded": REPORT + "import transformers.generation.utils as gu, transformers.cache_utils as cu\n"
                                        "importlib.reload(gu)\nimportlib.reload(cu)\nreport()",
    "reverted and re-applied": REPORT + """
originals = {}
for s in hf_genfix.status():
    for owner, attr, obj in registry.installed(s.id):
        if patch_of(obj) is None:
            continue
        while patch_of(obj) is not None:  # patches may stack on one attribute: the original is below them all
            obj = obj.__wrapped__
        originals[(id(owner), attr)] = (owner, attr, obj)
hf_genfix.revert()
# Identical object back in place; or, where the patch had created the slot (a method bound on an instance such
# as a module's logger, or one inherited from a base class), the slot gone again.
identical = all(vars(owner).get(attr) is original
                or (attr not in vars(owner) and getattr(owner, attr) == original)
                for owner, attr, original in originals.values())
after_revert = {s.id: s.state for s in hf_genfix.status()}
hf_genfix.activate()
report(identical=identical, after_revert=after_revert)
""",
}


def _forced_env():
    from hf_genfix._manifest import load_dir
    from hf_genfix.toolkit import env_name

    return {env_name(m.id): "on" for m in load_dir()}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "forced"])
def test_every_import_order_gives_the_same_state(mode):
    env = _forced_env() if mode == "forced" else {}
    if mode == "forced" and not env:
        pytest.skip("no patches in patches/")
    results = {name: run_json(code, env=env) for name, code in ORDERS.items()}
    reference = results["hf_genfix first"]["states"]
    for name, out in results.items():
        assert out["states"] == reference, f"{name}: {out['states']} != {reference}"
        doubled = {k: n for k, n in out["layers"].items() if n != 1}
        assert not doubled, f"{name}: wrapped more than once: {doubled}"
    assert results["reverted and re-applied"]["identical"] is True
    assert all(state in ("disabled", "not-needed", "pending", "drift", "failed")
               for state in results["reverted and re-applied"]["after_revert"].values())
    if mode == "forced":
        installed = [pid for pid, state in reference.items() if state in ("applied", "forced")]
        assert installed, f"forcing every patch installed none: {reference}"
        assert results["hf_genfix first"]["layers"], "installed patches recorded no changes"
