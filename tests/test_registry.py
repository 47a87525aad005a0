"""The registry against a fake transformers: version gating, states, drift, failure, strict mode, revert."""

from __future__ import annotations

import pytest

from hf_genfix._registry import in_range


@pytest.mark.parametrize(
    "version, expected",
    [
        ("5.11.0", False),
        ("5.12.0", True),
        ("5.12.0.dev0", True),   # a development snapshot of 5.12 is gated as 5.12
        ("5.12.0rc1", True),
        ("5.13.1", True),
        ("5.14.0.dev0", False),
        ("5.14.0", False),
        ("5.13.0+local", True),  # a local build of a release is that release
        ("5.13.0.post1", True),
    ],
)
def test_version_gating_by_release_number(version, expected):
    assert in_range(">=5.12.0,<5.14.0", version) is expected


@pytest.mark.parametrize(
    "version, state",
    [("5.12.0.dev0", "applied"), ("4.57.0rc1", "not-needed"), ("5.24.0+local", "not-needed"),
     ("5.13.0+local", "applied")],
)
def test_state_follows_installed_version(fake_world, version, state):
    fake_world.transformers(version)
    fake_world.manifest("fake-crop", ">=5.12.0,<5.14.0")
    out = fake_world.run("""
        registry.activate()
        before = states()
        import transformers.cache_utils as cu
        print(json.dumps({"before": before, "after": states(), "crop": list(cu.SlidingLayer().crop(3))}))
    """)
    assert out["before"] == {"fake-crop": "pending"}
    assert out["after"] == {"fake-crop": state}
    expected = ["fixed", "upstream", 3] if state == "applied" else ["upstream", 3]
    assert out["crop"] == expected


def test_pending_until_target_module_imported(fake_world):
    fake_world.transformers("5.12.0")
    fake_world.manifest("fake-crop", ">=5.12.0")
    out = fake_world.run("""
        registry.activate()
        import transformers
        mid = states()
        import transformers.cache_utils
        print(json.dumps({"mid": mid, "after": states(),
                          "reason": registry.status()[0].reason}))
    """)
    # transformers is imported and in range: decided, hooked, installed as cache_utils' import completes.
    assert out["mid"] == {"fake-crop": "armed"}
    assert out["after"] == {"fake-crop": "applied"}


@pytest.mark.parametrize(
    "env, state",
    [({"HF_GENFIX_FAKE_CROP": "off"}, "disabled"), ({"HF_GENFIX": "off"}, "disabled"),
     ({"HF_GENFIX_FAKE_CROP": "on"}, "forced"), ({"HF_GENFIX_FAKE_CROP": "auto"}, "not-needed")],
)
def test_toggles(fake_world, env, state):
    fake_world.transformers("5.24.0")
    fake_world.manifest("fake-crop", ">=5.12.0,<5.14.0")
    out = fake_world.run("""
        registry.activate()
        import transformers.cache_utils as cu
        print(json.dumps({"states": states(), "crop": list(cu.Layer().crop(1))}))
    """, env=env)
    assert out["states"] == {"fake-crop": state}
    assert (out["crop"][0] == "fixed") is (state == "forced")


def test_drift_warns_once_and_leaves_the_import_working(fake_world):
    fake_world.transformers("5.12.0", cache_utils="class Layer:\n    def crop(self, length):\n        return length\n")
    fake_world.manifest("fake-crop", ">=5.12.0")
    out = fake_world.run("""
        registry.activate()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import transformers.cache_utils as cu
        msgs = [str(w.message) for w in caught if w.category.__name__ == "HFGenfixWarning"]
        print(json.dumps({"states": states(), "msgs": msgs, "crop": cu.Layer().crop(4),
                          "reason": registry.status()[0].reason}))
    """)
    assert out["states"] == {"fake-crop": "drift"}
    assert out["crop"] == 4
    assert len(out["msgs"]) == 1
    for part in ("fake-crop", "transformers.cache_utils:Layer.crop", "5.12.0", "max_length"):
        assert part in out["msgs"][0]


def test_missing_target_is_drift(fake_world):
    fake_world.transformers("5.12.0", cache_utils="class Other:\n    pass\n")
    fake_world.manifest("fake-crop", ">=5.12.0")
    out = fake_world.run("""
        registry.activate()
        import transformers.cache_utils
        print(json.dumps({"states": states(), "reason": registry.status()[0].reason}))
    """)
    assert out["states"] == {"fake-crop": "drift"}
    assert "Layer" in out["reason"]


def test_failing_fix_is_rolled_back_completely(fake_world):
    fake_world.transformers("5.12.0")
    fake_world.manifest("fake-fail", ">=5.12.0", fix="genfix_fake_fix:install_failing",
                        targets=("transformers.cache_utils:Layer.update",))
    out = fake_world.run("""
        import transformers.cache_utils as cu
        original = cu.Layer.__dict__["update"]
        registry.activate()
        print(json.dumps({"states": states(), "reason": registry.status()[0].reason,
                          "same": cu.Layer.__dict__["update"] is original}))
    """)
    assert out["states"] == {"fake-fail": "failed"}
    assert "boom half-way" in out["reason"]
    assert out["same"] is True


def test_strict_mode_raises_instead_of_warning(fake_world):
    fake_world.transformers("5.12.0", cache_utils="class Other:\n    pass\n")
    fake_world.manifest("fake-crop", ">=5.12.0")
    out = fake_world.run("""
        registry.activate()
        try:
            import transformers.cache_utils
            raised = None
        except Exception as exc:
            raised = type(exc).__name__ + ": " + str(exc)
        print(json.dumps({"raised": raised, "states": states()}))
    """, env={"HF_GENFIX_STRICT": "1"})
    assert out["raised"] and out["raised"].startswith("PatchError")
    assert "fake-crop" in out["raised"]
    assert out["states"] == {"fake-crop": "drift"}


def test_thousand_revert_cycles_restore_identical_objects(fake_world):
    fake_world.transformers("5.12.0")
    fake_world.manifest("fake-crop", ">=5.12.0")
    out = fake_world.run("""
        import transformers.cache_utils as cu
        original = cu.Layer.__dict__["crop"]
        ok = True
        for _ in range(1000):
            registry.activate()
            wrapped = cu.Layer.__dict__["crop"]
            ok &= wrapped is not original and wrapped.__wrapped__ is original
            registry.revert()
            ok &= cu.Layer.__dict__["crop"] is original and "crop" not in cu.SlidingLayer.__dict__
        print(json.dumps({"ok": ok, "states": states()}))
    """)
    assert out["ok"] is True
    assert out["states"] == {"fake-crop": "disabled"}


def test_disabled_block_calls_upstream_and_reapplies(fake_world):
    fake_world.transformers("5.12.0")
    fake_world.manifest("fake-crop", ">=5.12.0")
    out = fake_world.run("""
        import transformers.cache_utils as cu
        registry.activate()
        with registry.disabled("fake-crop"):
            inside = (cu.Layer().crop(2), states())
        after = (cu.Layer().crop(2), states())
        try:
            with registry.disabled("no-such-patch"):
                pass
            unknown = None
        except KeyError as exc:
            unknown = str(exc)
        print(json.dumps({"inside": inside, "after": after, "unknown": unknown}))
    """)
    assert out["inside"] == [["upstream", 2], {"fake-crop": "disabled"}]
    assert out["after"] == [["fixed", "upstream", 2], {"fake-crop": "applied"}]
    assert "no-such-patch" in out["unknown"]


def test_stacked_patches_unwind_in_reverse_order(fake_world):
    fake_world.transformers("5.12.0")
    fake_world.manifest("fake-a", ">=5.12.0")
    fake_world.manifest("fake-b", ">=5.12.0")
    out = fake_world.run("""
        import transformers.cache_utils as cu
        original = cu.Layer.__dict__["crop"]
        registry.activate()
        twice = list(cu.Layer().crop(1))
        with registry.disabled("fake-a"):
            only_b = list(cu.Layer().crop(1))
        again = list(cu.Layer().crop(1))
        registry.revert()
        print(json.dumps({"twice": twice, "only_b": only_b, "again": again,
                          "restored": cu.Layer.__dict__["crop"] is original}))
    """)
    assert out["twice"] == ["fixed", "fixed", "upstream", 1]
    assert out["only_b"] == ["fixed", "upstream", 1]
    assert out["again"] == out["twice"]
    assert out["restored"] is True


def test_activate_is_idempotent(fake_world):
    fake_world.transformers("5.12.0")
    fake_world.manifest("fake-crop", ">=5.12.0")
    out = fake_world.run("""
        import transformers.cache_utils as cu
        registry.activate(); registry.activate()
        print(json.dumps({"crop": list(cu.Layer().crop(1))}))
    """)
    assert out["crop"] == ["fixed", "upstream", 1]


def test_drift_is_remembered_across_revert_and_activate(fake_world):
    fake_world.transformers("5.12.0", cache_utils="class Other:\n    pass\n")
    fake_world.manifest("fake-crop", ">=5.12.0")
    out = fake_world.run("""
        registry.activate()
        import transformers.cache_utils
        first = states()
        registry.revert()
        reverted = states()
        registry.activate()
        print(json.dumps({"first": first, "reverted": reverted, "again": states()}))
    """)
    assert out["first"] == out["again"] == {"fake-crop": "drift"}
    assert out["reverted"] == {"fake-crop": "disabled"}
