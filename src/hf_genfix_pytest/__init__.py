"""The ``hf_genfix`` pytest plugin: the ``generation_checker`` fixture and the ``hf_genfix_disabled`` marker.

pytest loads it at start-up wherever hf_genfix is installed (entry point ``pytest11``). It lives outside the
``hf_genfix`` package on purpose: importing ``hf_genfix`` activates its patches, and merely having hf_genfix
installed must not change anybody's test suite. So at start-up it imports nothing but pytest; hf_genfix (and
torch, transformers) are imported by the first test that uses the fixture or the marker.

    def test_generation(generation_checker):
        generation_checker(MyModelForCausalLM(tiny_config))     # fails the test with the report

    @pytest.mark.hf_genfix_disabled("right-padding")            # what users without the patch get
    def test_without_the_patch(): ...
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

MARKER = "hf_genfix_disabled"


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*patch_ids): run the test with these hf_genfix patches disabled (every patch when none is "
        "named), e.g. to see what users without hf_genfix get",
    )


@pytest.fixture
def generation_checker() -> Callable[..., Any]:
    """``generation_checker(model, tokenizer=None, **options)`` runs ``hf_genfix.testing.check_generation`` and
    fails the test with the report when a check fails; returns the report otherwise."""
    pytest.importorskip("torch", reason="generation_checker needs torch")
    pytest.importorskip("transformers", reason="generation_checker needs transformers")

    def check(model: Any, tokenizer: Any = None, **options: Any) -> Any:
        __tracebackhide__ = True
        from hf_genfix.testing import check_generation

        return check_generation(model, tokenizer, **options).raise_for_failures()

    return check


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Any:
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        yield
        return
    import hf_genfix

    with hf_genfix.disabled(*marker.args):
        yield
