"""The core under concurrency, serialization and odd installs (issue 12), against a fake transformers.

Each test is a figure of the reliability review: overlapping ``disabled()`` / ``forced()`` blocks in threads and
asyncio tasks, pickling and copying patched callables, versions that are not PEP 440, ``importlib.reload`` of a
patched module, target modules the release does not have, strict mode on every import attempt, and where an
``HFGenfixWarning`` points.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from hf_genfix._registry import in_range

# Fixes that tag what they wrap, so that stacked patches can be told apart in a result.
TAG_FIX = '''
def _tagger(tag):
    def wrapper(wrapped, instance, args, kwargs):
        return (tag,) + tuple(wrapped(*args, **kwargs))
    return wrapper

def install_a(patcher):
    patcher.wrap("transformers.cache_utils:Layer.crop", _tagger("a"))

def install_b(patcher):
    patcher.wrap("transformers.cache_utils:Layer.crop", _tagger("b"))

def install_all(patcher):
    for target in ("transformers.cache_utils:Layer.crop", "transformers.cache_utils:Layer.build",
                   "transformers.cache_utils:make_layer"):
        patcher.wrap(target, _tagger("fixed"))

def install_missing(patcher):
    patcher.wrap("transformers.no_such_module:Thing.method", _tagger("fixed"))
'''

CACHE_UTILS = '''
class Layer:
    def crop(self, max_length):
        return ("upstream", max_length)

    @classmethod
    def build(cls, n):
        return ("upstream-build", n)


def make_layer(n):
    return ("upstream-make", n)
'''

CROP = ("transformers.cache_utils:Layer.crop",)
ALL_TARGETS = CROP + ("transformers.cache_utils:Layer.build", "transformers.cache_utils:make_layer")


@pytest.fixture
def world(fake_world):
    (fake_world.root / "genfix_tag_fix.py").write_text(TAG_FIX)
    return fake_world


def _stacked(world, version="5.12.0"):
    world.transformers(version)
    world.manifest("fake-a", ">=5.12.0", fix="genfix_tag_fix:install_a", targets=CROP)
    world.manifest("fake-b", ">=5.12.0", fix="genfix_tag_fix:install_b", targets=CROP)


# -- 1. disabled() is per thread / task, and blocks may close in any order --------------------------------------
def test_overlapping_disabled_blocks_in_threads_exit_exactly(world):
    _stacked(world)
    out = world.run("""
        import threading
        import transformers.cache_utils as cu
        registry.activate()
        seen = {}
        a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

        def task_a():
            with registry.disabled("fake-a"):
                a_in.set(); b_in.wait()
                seen["a inside"] = list(cu.Layer().crop(1))
            a_out.set()
            seen["a after"] = list(cu.Layer().crop(1))

        def task_b():
            a_in.wait()
            with registry.disabled("fake-b"):
                b_in.set(); a_out.wait()
                seen["b inside, a gone"] = list(cu.Layer().crop(1))
                seen["b states"] = states()
            seen["b after"] = list(cu.Layer().crop(1))

        def bystander():
            a_in.wait(); b_in.wait()
            seen["bystander"] = list(cu.Layer().crop(1))
            seen["bystander states"] = states()

        threads = [threading.Thread(target=f) for f in (task_a, task_b, bystander)]
        for t in threads: t.start()
        for t in threads: t.join()
        print(json.dumps(seen))
    """)
    both = ["b", "a", "upstream", 1]
    assert out["a inside"] == ["b", "upstream", 1]
    assert out["b inside, a gone"] == ["a", "upstream", 1]
    assert out["b states"] == {"fake-a": "applied", "fake-b": "disabled"}
    assert out["a after"] == out["b after"] == out["bystander"] == both
    assert out["bystander states"] == {"fake-a": "applied", "fake-b": "applied"}


def test_overlapping_disabled_blocks_in_asyncio_tasks_exit_exactly(world):
    _stacked(world)
    out = world.run("""
        import asyncio
        import transformers.cache_utils as cu
        registry.activate()
        seen = {}

        async def main():
            a_in, b_in, a_out = asyncio.Event(), asyncio.Event(), asyncio.Event()

            async def task_a():
                with registry.disabled("fake-a"):
                    a_in.set(); await b_in.wait()
                    seen["a inside"] = list(cu.Layer().crop(1))
                a_out.set()
                seen["a after"] = list(cu.Layer().crop(1))

            async def task_b():
                await a_in.wait()
                with registry.disabled("fake-b"):
                    b_in.set(); await a_out.wait()
                    seen["b inside, a gone"] = list(cu.Layer().crop(1))
                seen["b after"] = list(cu.Layer().crop(1))

            await asyncio.gather(task_a(), task_b())
            seen["main"] = list(cu.Layer().crop(1))

        asyncio.run(main())
        print(json.dumps(seen))
    """)
    assert out["a inside"] == ["b", "upstream", 1]
    assert out["b inside, a gone"] == ["a", "upstream", 1]
    assert out["a after"] == out["b after"] == out["main"] == ["b", "a", "upstream", 1]


def test_disabled_blocks_closed_out_of_order_by_hand(world):
    _stacked(world)
    out = world.run("""
        import transformers.cache_utils as cu
        registry.activate()
        first, everything, second = registry.disabled("fake-a"), registry.disabled(), registry.disabled("fake-b")
        first.__enter__(); everything.__enter__(); second.__enter__()
        none = list(cu.Layer().crop(1))
        everything.__exit__(None, None, None)
        only_a_off_b_off = list(cu.Layer().crop(1))
        first.__exit__(None, None, None)
        only_b_off = list(cu.Layer().crop(1))
        second.__exit__(None, None, None)
        print(json.dumps([none, only_a_off_b_off, only_b_off, list(cu.Layer().crop(1)), states()]))
    """)
    assert out == [["upstream", 1], ["upstream", 1], ["a", "upstream", 1], ["b", "a", "upstream", 1],
                   {"fake-a": "applied", "fake-b": "applied"}]


# -- 2. forced() blocks close exactly and never undo revert() ----------------------------------------------------
def test_overlapping_forced_blocks_do_not_undo_revert(world):
    world.transformers("5.12.0")
    world.manifest("fake-a", ">=5.12.0", fix="genfix_tag_fix:install_a", targets=CROP)   # applied when active
    world.manifest("fake-b", "<5.0.0", fix="genfix_tag_fix:install_b", targets=CROP)     # outside its range
    out = world.run("""
        import threading
        import transformers.cache_utils as cu
        registry.activate()
        registry.revert()
        one, two = registry.forced("fake-b"), registry.forced("fake-b")
        one.__enter__(); two.__enter__()
        inside = (list(cu.Layer().crop(1)), states())
        one.__exit__(None, None, None)          # not the last one opened
        still = (list(cu.Layer().crop(1)), states())
        two.__exit__(None, None, None)
        after = (list(cu.Layer().crop(1)), states())
        print(json.dumps({"inside": inside, "still": still, "after": after}))
    """)
    assert out["inside"] == [["b", "upstream", 1], {"fake-a": "disabled", "fake-b": "forced"}]
    assert out["still"] == out["inside"]
    assert out["after"] == [["upstream", 1], {"fake-a": "disabled", "fake-b": "not-needed"}]


def test_random_interleavings_of_blocks_end_where_they_started(world):
    _stacked(world)
    world.manifest("fake-c", "<5.0.0", fix="genfix_tag_fix:install_b", targets=CROP)
    out = world.run("""
        import random
        import transformers.cache_utils as cu
        registry.activate()
        start = (list(cu.Layer().crop(1)), states())
        rng, bad = random.Random(12), []
        for trial in range(150):
            open_blocks = []
            for step in range(8):
                if open_blocks and rng.random() < 0.45:
                    kind, ids, block = open_blocks.pop(rng.randrange(len(open_blocks)))
                    block.__exit__(None, None, None)
                else:
                    kind = rng.choice(["disabled", "forced"])
                    ids = rng.sample(["fake-a", "fake-b", "fake-c"], rng.randint(0 if kind == "disabled" else 1, 2))
                    block = getattr(registry, kind)(*ids)
                    block.__enter__()
                    open_blocks.append((kind, ids, block))
                off = set().union(*[set(i) or {"fake-a", "fake-b", "fake-c"}
                                    for k, i, _ in open_blocks if k == "disabled"])
                forced = set().union(*[set(i) for k, i, _ in open_blocks if k == "forced"])
                want = {"fake-a": "applied", "fake-b": "applied",
                        "fake-c": "forced" if "fake-c" in forced else "not-needed"}
                want = {p: "disabled" if p in off and s in ("applied", "forced") else s for p, s in want.items()}
                if states() != want:
                    bad.append((trial, step, states(), want))
            for kind, ids, block in reversed(open_blocks):
                block.__exit__(None, None, None)
            if (list(cu.Layer().crop(1)), states()) != start:
                bad.append((trial, "end", states()))
        print(json.dumps({"bad": bad[:3]}))
    """)
    assert out["bad"] == []


# -- 3. pickling and copying ---------------------------------------------------------------------------------
def test_patched_callables_pickle_by_reference_and_load_where_hf_genfix_is_off(world):
    world.transformers("5.12.0", cache_utils=CACHE_UTILS)
    world.manifest("fake-all", ">=5.12.0", fix="genfix_tag_fix:install_all", targets=ALL_TARGETS)
    dumped = world.run("""
        import copy, pickle
        import transformers.cache_utils as cu
        registry.activate()
        layer = cu.Layer()
        subjects = {"bound": layer.crop, "via class": cu.Layer.crop, "classmethod": cu.Layer.build,
                    "module function": cu.make_layer, "raw": cu.Layer.__dict__["crop"]}
        args = {"bound": (1,), "via class": (layer, 1), "classmethod": (1,), "module function": (1,),
                "raw": (layer, 1)}
        out = {}
        for name, f in subjects.items():
            for proto in range(pickle.HIGHEST_PROTOCOL + 1):
                again = pickle.loads(pickle.dumps(f, protocol=proto))
                assert list(again(*args[name])) == list(f(*args[name])), (name, proto)
            out[name] = {"result": list(f(*args[name])), "pickle": pickle.dumps(f, protocol=2).hex(),
                         "copy": list(copy.copy(f)(*args[name])), "deepcopy": list(copy.deepcopy(f)(*args[name]))}
        deep = copy.deepcopy(layer.crop)
        out["deepcopy binds a copy"] = type(deep.__self__) is cu.Layer and deep.__self__ is not layer
        print(json.dumps(out))
    """)
    assert dumped.pop("deepcopy binds a copy") is True
    for name, record in dumped.items():
        assert record["result"][0] == "fixed", name
        assert record["copy"] == record["deepcopy"] == record["result"], name
        assert b"hf_genfix" not in bytes.fromhex(record["pickle"]), name  # by reference, as upstream's
    (world.root / "dumped.json").write_text(json.dumps({k: r["pickle"] for k, r in dumped.items()}))
    load = f"""
        import pickle
        dumped = json.load(open({str(world.root / "dumped.json")!r}))
        import transformers.cache_utils as cu
        ACTIVATE
        layer = cu.Layer()
        args = {{"bound": (1,), "via class": (layer, 1), "classmethod": (1,), "module function": (1,),
                 "raw": (layer, 1)}}
        print(json.dumps({{k: list(pickle.loads(bytes.fromhex(v))(*args[k]))[0] for k, v in dumped.items()}}))
    """
    upstream = world.run(load.replace("ACTIVATE", "pass"))
    assert upstream == {"bound": "upstream", "via class": "upstream", "classmethod": "upstream-build",
                        "module function": "upstream-make", "raw": "upstream"}
    patched = world.run(load.replace("ACTIVATE", "registry.activate()"))
    assert set(patched.values()) == {"fixed"}


# -- 4. versions that are not PEP 440 -----------------------------------------------------------------------
@pytest.mark.parametrize("version", ["main", "5.30.0-custom", "5.x"])
@pytest.mark.parametrize("toggle, state", [("auto", "not-needed"), ("on", "forced")])
def test_version_that_is_not_pep440_installs_nothing_unless_forced(world, version, toggle, state):
    world.transformers(version)
    world.manifest("fake-a", ">=4.0.0", fix="genfix_tag_fix:install_a", targets=CROP)
    out = world.run("""
        registry.activate()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import transformers
            import transformers.cache_utils as cu
            registry.status()
        msgs = [(str(w.message), w.filename) for w in caught if w.category.__name__ == "HFGenfixWarning"]
        print(json.dumps({"states": states(), "crop": list(cu.Layer().crop(1)), "msgs": msgs,
                          "reason": registry.status()[0].reason}))
    """, env={"HF_GENFIX_FAKE_A": toggle})
    assert out["states"] == {"fake-a": state}
    assert out["crop"] == (["a", "upstream", 1] if toggle == "on" else ["upstream", 1])
    assert len(out["msgs"]) == 1 and repr(version) in out["msgs"][0][0]
    assert out["msgs"][0][1] == "<string>"  # the user's `import transformers`
    assert version in out["reason"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=20))
def test_any_version_string_is_judged_without_raising(version):
    assert in_range(">=5.0.0,<5.14.0", version) in (True, False, None)


def test_list_works_on_a_transformers_reporting_main(fake_world):
    import json
    import subprocess
    import sys

    from conftest import SRC

    fake_world.transformers("main")
    env = {"PYTHONPATH": f"{fake_world.root}{__import__('os').pathsep}{SRC}", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "hf_genfix", "list", "--json"], env=env, capture_output=True,
                          text=True, cwd=fake_world.root)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["transformers"] == "main"
    assert {p["state"] for p in data["patches"]} <= {"not-needed", "disabled"}
    assert proc.stderr.count("HFGenfixWarning") == 1


# -- 5. importlib.reload of a patched module -------------------------------------------------------------------
def test_reloaded_module_gets_the_patches_again_and_revert_undoes_both(world):
    _stacked(world)
    out = world.run("""
        import importlib
        import transformers.cache_utils as cu
        registry.activate()
        old_class, old_original = cu.Layer, cu.Layer.__dict__["crop"].__wrapped__.__wrapped__
        importlib.reload(cu)
        new_class = cu.Layer
        seen = {"new class is new": new_class is not old_class, "states": states(),
                "new": list(cu.Layer().crop(1)), "old": list(old_class().crop(1))}
        importlib.reload(cu)
        seen["twice"] = list(cu.Layer().crop(1))
        registry.revert()
        seen["reverted"] = [list(k().crop(1)) for k in (old_class, new_class, cu.Layer)]
        seen["old identical"] = old_class.__dict__["crop"] is old_original
        print(json.dumps(seen))
    """)
    assert out["new class is new"] is True
    assert out["states"] == {"fake-a": "applied", "fake-b": "applied"}
    assert out["new"] == out["old"] == out["twice"] == ["b", "a", "upstream", 1]
    assert out["reverted"] == [["upstream", 1]] * 3
    assert out["old identical"] is True


def test_reload_keeps_stacked_wrappers_on_objects_that_survive_it(world):
    # A module-level object the reloaded module gets back (a logger) keeps both wrappers, once each.
    world.transformers("5.12.0", cache_utils="import logging\nlogger = logging.getLogger('fake')\n"
                                             "if not hasattr(logger, 'tag'):\n"
                                             "    logger.tag = lambda n: ('upstream', n)\n")
    target = ("transformers.cache_utils:logger.tag",)
    (world.root / "genfix_logger_fix.py").write_text(
        "from genfix_tag_fix import _tagger\n"
        "def install_a(p):\n    p.wrap('transformers.cache_utils:logger.tag', _tagger('a'))\n"
        "def install_b(p):\n    p.wrap('transformers.cache_utils:logger.tag', _tagger('b'))\n")
    world.manifest("fake-a", ">=5.12.0", fix="genfix_logger_fix:install_a", targets=target)
    world.manifest("fake-b", ">=5.12.0", fix="genfix_logger_fix:install_b", targets=target)
    out = world.run("""
        import importlib
        import transformers.cache_utils as cu
        registry.activate()
        before = list(cu.logger.tag(1))
        importlib.reload(cu)
        print(json.dumps({"before": before, "after": list(cu.logger.tag(1)), "states": states()}))
    """)
    assert out["before"] == ["b", "a", "upstream", 1]
    assert out["states"] == {"fake-a": "applied", "fake-b": "applied"}
    assert out["after"] == out["before"]


def test_reload_that_breaks_the_fix_is_drift_and_truthful(world):
    world.transformers("5.12.0")
    world.manifest("fake-crop", ">=5.12.0")  # its fix requires crop(max_length)
    out = world.run("""
        import importlib
        import transformers.cache_utils as cu
        registry.activate()
        before, old_class = (states(), list(cu.Layer().crop(1))), cu.Layer
        with open(cu.__file__, "w") as f:
            f.write("class Layer:\\n    def crop(self, length):\\n        return ('upstream', length)\\n")
        importlib.invalidate_caches()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            importlib.reload(cu)
        print(json.dumps({"before": before, "after": states(), "warned": len(caught),
                          "reason": registry.status()[0].reason,
                          "crop": [list(k().crop(1)) for k in (old_class, cu.Layer)]}))
    """)
    assert out["before"] == [{"fake-crop": "applied"}, ["fixed", "upstream", 1]]
    assert out["after"] == {"fake-crop": "drift"}
    assert out["warned"] == 1 and "max_length" in out["reason"]
    assert out["crop"] == [["upstream", 1], ["upstream", 1]]


# -- 6. a target module the release does not have ---------------------------------------------------------------
def test_missing_target_module_is_drift_once_transformers_is_imported(world):
    world.transformers("5.12.0")
    world.manifest("fake-missing", ">=5.12.0", fix="genfix_tag_fix:install_missing",
                   targets=("transformers.no_such_module:Thing.method",))
    world.manifest("fake-later", "<5.0.0", fix="genfix_tag_fix:install_missing",
                   targets=("transformers.no_such_module:Thing.method",))
    out = world.run("""
        registry.activate()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import transformers
            import transformers.cache_utils
        msgs = [(str(w.message), w.filename) for w in caught if w.category.__name__ == "HFGenfixWarning"]
        print(json.dumps({"states": states(), "msgs": msgs,
                          "loaded": "transformers.no_such_module" in sys.modules}))
    """)
    assert out["states"] == {"fake-missing": "drift", "fake-later": "not-needed"}
    assert len(out["msgs"]) == 1
    assert "transformers.no_such_module" in out["msgs"][0][0] and out["msgs"][0][1] == "<string>"


# -- 7. strict mode raises on every attempt until the environment changes ---------------------------------------
@pytest.mark.parametrize("missing", ["attribute", "module"])
def test_strict_raises_on_every_import_attempt_until_fixed(world, missing):
    if missing == "attribute":
        world.transformers("5.12.0", cache_utils="class Other:\n    pass\n")
        world.manifest("fake-a", ">=5.12.0", fix="genfix_tag_fix:install_a", targets=CROP)
        module, repair = "transformers.cache_utils", "cache_utils.py"
    else:
        world.transformers("5.12.0")
        world.manifest("fake-a", ">=5.12.0", fix="genfix_tag_fix:install_missing",
                       targets=("transformers.no_such_module:Thing.method",))
        module, repair = "transformers", "no_such_module.py"
    out = world.run(f"""
        import importlib
        registry.activate()
        attempts = []
        for attempt in range(3):
            try:
                importlib.import_module({module!r})
                attempts.append("imported")
            except Exception as exc:
                attempts.append(type(exc).__name__)
        # The environment changes: the target appears.
        import os
        target = os.path.join({str(world.root / "transformers")!r}, {repair!r})
        with open(target, "w") as f:
            f.write("class Thing:\\n    def method(self):\\n        return ('upstream',)\\n"
                    "class Layer:\\n    def crop(self, max_length):\\n        return ('upstream', max_length)\\n")
        importlib.invalidate_caches()
        importlib.import_module({module!r})
        importlib.import_module("transformers.no_such_module" if {missing!r} == "module" else {module!r})
        print(json.dumps({{"attempts": attempts, "states": states()}}))
    """, env={"HF_GENFIX_STRICT": "1"})
    assert out["attempts"] == ["PatchError"] * 3
    assert out["states"] == {"fake-a": "applied"}


# -- 9. where the warning points -------------------------------------------------------------------------------
def test_warning_points_at_the_users_import_line(world):
    world.transformers("5.12.0", cache_utils="class Other:\n    pass\n")
    world.manifest("fake-a", ">=5.12.0", fix="genfix_tag_fix:install_a", targets=CROP)
    out = world.run("""
        import importlib, inspect
        registry.activate()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = inspect.currentframe().f_lineno + 1
            importlib.import_module("transformers.cache_utils")
        print(json.dumps({"where": [(w.filename, w.lineno) for w in caught], "line": line}))
    """)
    assert out["where"] == [["<string>", out["line"]]]
