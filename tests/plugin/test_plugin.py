"""The pytest plugin in a real pytest run (pytester, subprocess): the fixture passes a correct model and fails a
broken one with the report, the marker disables patches, and start-up imports neither torch nor transformers
(nor needs them)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

# Imported here, before pytester snapshots sys.modules around each test: numpy (under transformers) cannot be
# imported a second time in one process once the snapshot is restored.
try:
    import torch  # noqa: F401
    import transformers  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="needs torch and transformers")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _entry_point_installed() -> bool:
    return any(ep.name == "hf_genfix" and ep.value == "hf_genfix_pytest"
               for ep in metadata.entry_points(group="pytest11"))


def _plugin_args() -> list[str]:
    # Installed, pytest loads it by itself (and -p with the module would register it twice).
    return [] if _entry_point_installed() else ["-p", "hf_genfix_pytest"]


def _run(pytester, *args: str):
    return pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider", *args)


def test_pyproject_declares_the_entry_point():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"hf_genfix": "hf_genfix_pytest"}


@pytest.mark.slow
@needs_torch
def test_fixture_and_marker_in_a_pytest_run(pytester):
    # One pytest run (one transformers import) for both: the fixture on a correct and a broken model, and the
    # marker switching patches off for one test only.
    pytester.makepyfile(genfix_broken_models=(HERE / "genfix_broken_models.py").read_text())
    pytester.makepyfile(test_models='''
        from genfix_broken_models import ArangePositionsGPT2, build
        from hf_genfix.oracles import tiny_model

        def test_correct(generation_checker):
            report = generation_checker(tiny_model("gpt2"), checks=["cache", "left-padding"])
            assert report["left-padding"].passed

        def test_broken(generation_checker):
            generation_checker(build(ArangePositionsGPT2, "gpt2"), checks=["left-padding"])
    ''')
    pytester.makepyfile(test_marker='''
        import pytest
        import hf_genfix
        import transformers.generation.utils  # noqa: F401

        def states():
            return {s.id: s.state for s in hf_genfix.status()}

        BEFORE = {}

        def test_before():
            BEFORE.update(states())

        @pytest.mark.hf_genfix_disabled()
        def test_all_off():
            assert set(states().values()) <= {"disabled", "not-needed"}, states()

        @pytest.mark.hf_genfix_disabled("right-padding")
        def test_one_off():
            if "right-padding" not in states():
                pytest.skip("this build has no right-padding patch")
            assert states()["right-padding"] == "disabled"
            assert all(state != "disabled" for pid, state in states().items() if pid != "right-padding")

        def test_restored_after():
            assert states() == BEFORE
    ''')
    result = _run(pytester, "-v")
    result.assert_outcomes(passed=5, failed=1)  # 4 marker tests, test_correct
    result.stdout.fnmatch_lines([
        "*test_models.py::test_correct PASSED*",
        "*test_models.py::test_broken FAILED*",
    ])
    result.stdout.fnmatch_lines([
        "*GenerationCheckFailed*",
        "*FAILED   left-padding: a left-padded batch*vs each row alone*",
        "*position ids counted from the first column (arange)*",
    ])
    # The failure points at the test, not into hf_genfix's internals.
    assert "def check(model" not in result.stdout.str()
    result = _run(pytester, "--markers")
    result.stdout.fnmatch_lines(["*@pytest.mark.hf_genfix_disabled(*patch_ids)*"])


def test_start_up_imports_neither_torch_nor_transformers_and_works_without_them(pytester):
    # Packages named torch / transformers that cannot be imported: a machine without them.
    for name in ("torch", "transformers"):
        pkg = pytester.mkpydir(name)
        (pkg / "__init__.py").write_text(f"raise ModuleNotFoundError('no {name} here', name={name!r})\n")
    pytester.makepyfile('''
        import sys

        def test_nothing_heavy_at_start_up():
            assert "torch" not in sys.modules and "transformers" not in sys.modules
            assert "hf_genfix_pytest" in sys.modules
            # merely having hf_genfix installed must not activate it in somebody's test suite
            assert "hf_genfix" not in sys.modules

        def test_fixture_skips_cleanly(generation_checker):
            raise AssertionError("not reached: the fixture skips without torch")
    ''')
    result = _run(pytester, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*generation_checker needs torch*"])


def test_the_patch_harness_leaves_no_modules_folder_behind(pytester, monkeypatch):
    """hf_genfix.testing.patches gives each session its own HF_MODULES_CACHE (two suites at once must not share
    remote-code copies) and removes it at the end: every run used to leave a folder in the temp dir."""
    pytester.makepyfile(test_where="""
        import os

        def test_folder():
            folder = os.environ["HF_MODULES_CACHE"]
            assert os.path.isdir(folder)
            with open(os.path.join(os.path.dirname(__file__), "folder.txt"), "w") as out:
                out.write(folder)
    """)
    monkeypatch.delenv("HF_MODULES_CACHE", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "hf_genfix.testing.patches")
    result.assert_outcomes(passed=1)
    folder = (pytester.path / "folder.txt").read_text()
    assert folder and not Path(folder).exists()
