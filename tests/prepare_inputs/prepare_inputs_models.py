"""What the prepare-inputs tests share: the architectures they cover and one tiny model of each per session."""

from __future__ import annotations

import contextlib

import pytest

ARCHITECTURES = (
    "gpt_neo", "gpt2", "gptj", "gpt_bigcode", "gpt_neox", "llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2",
    "phi", "phi3", "bloom", "opt", "falcon",
)

_models: dict = {}


def release():
    import transformers
    from packaging.version import Version

    return Version(Version(transformers.__version__).base_version)


def model_of(arch: str):
    """The tiny ``arch`` model, built once; an architecture this release lacks is a skip with the reason."""
    from hf_genfix.cli import load_targets
    from hf_genfix.oracles import ProbeSkipped, tiny_model

    load_targets()  # every patch decided (applied / not-needed) before the first model runs
    if arch not in _models:
        try:
            _models[arch] = tiny_model(arch)
        except ProbeSkipped as exc:
            pytest.skip(str(exc))
    return _models[arch]


def skip_known_limit(arch: str, scenario: str = "loop") -> None:
    """Scenarios ("loop": a hand-written loop; "no-cache": generate(use_cache=False)) that no prepare-inputs
    patch claims to fix, with the reason."""
    from packaging.version import Version

    if scenario == "no-cache" and arch in ("llama", "gemma") and release() < Version("4.41"):
        pytest.skip("generate(use_cache=False) is wrong for llama and gemma on 4.40 (cache_position kept "
                    "advancing; upstream PR 30380, fixed in 4.41): generate() itself, outside these patches")
    if scenario == "loop" and arch == "gemma2" and release() < Version("4.53"):
        pytest.skip("gemma2 before 4.53: forward allocates a HybridCache sized to the prompt when called without "
                    "a cache, and its get_seq_length counts non-zero slots of row 0; only generate()'s own cache "
                    "bookkeeping works there (evidence B)")


def patches_on(method) -> list:
    """The hf_genfix patches wrapping ``method`` and in effect in this thread (not inside ``disabled()``),
    outermost first (follows every wrapper's ``__wrapped__``)."""
    from hf_genfix._patcher import is_suppressed, patch_of

    found = []
    while patch_of(method) is not None:
        if not is_suppressed(patch_of(method)):
            found.append(patch_of(method))
        method = method.__wrapped__
    return found


@contextlib.contextmanager
def quiet_transformers():
    """transformers' warnings off: 4.45 - 4.46 log "use_cache=False but cache_implementation is hybrid" (gemma2)
    with a stray argument, which raises under pytest's log capture."""
    from transformers.utils import logging

    level = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(level)
