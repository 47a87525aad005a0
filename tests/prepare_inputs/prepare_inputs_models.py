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


def model_of(arch: str, seq2seq: bool = False):
    """The tiny ``arch`` model (an encoder-decoder one of ``oracles.decode.SEQ2SEQ`` with ``seq2seq``), built
    once; an architecture this release lacks is a skip with the reason."""
    from hf_genfix.doctor import import_targets
    from hf_genfix.oracles import ProbeSkipped, tiny_model
    from hf_genfix.oracles.decode import tiny_seq2seq

    import_targets()  # every patch decided (applied / not-needed) before the first model runs
    key = ("seq2seq", arch) if seq2seq else arch
    if key not in _models:
        try:
            _models[key] = tiny_seq2seq(arch) if seq2seq else tiny_model(arch)
        except ProbeSkipped as exc:
            pytest.skip(str(exc))
    return _models[key]


def skip_known_limit(arch: str, scenario: str = "loop") -> None:
    """Scenarios ("loop": a hand-written loop; "no-cache": generate(use_cache=False); "chunk": new tokens fed
    after a cached prefix, or upstream's contract test for the generic method) that no prepare-inputs patch
    claims to fix, with the reason."""
    from packaging.version import Version

    if scenario == "no-cache" and arch in ("llama", "gemma") and release() < Version("4.41"):
        pytest.skip("generate(use_cache=False) is wrong for llama and gemma on 4.40 (cache_position kept "
                    "advancing; upstream PR 30380, fixed in 4.41): generate() itself, outside these patches")
    if scenario == "chunk" and release() < Version("4.46"):
        pytest.skip("before 4.46 each model has its own prepare_inputs_for_generation that cuts ids longer than the "
                    "cache to the cache length and ignores cache_position (gpt2, opt, bloom, bart; llama on 4.40): "
                    "a chunk after a cached prefix is cut with and without hf_genfix (docs/prepare-inputs.md)")
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


def with_and_without(call, patch_id: str = "prepare-inputs"):
    """``call()`` once without the patch and once as this release's catalog installs it: two outcomes, each the
    return value or the exception's type name (the same upstream failure with and without is "unchanged")."""
    import hf_genfix

    def run():
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - compared by type below
            return type(exc).__name__

    with hf_genfix.disabled(patch_id):
        plain = run()
    return plain, run()
