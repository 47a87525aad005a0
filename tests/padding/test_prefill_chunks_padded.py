"""Chunked prefill with a left-padded batch (padding-prefill-chunks on 4.51-4.57, sliding-window-prefill-chunks on
5.0-5.2): every row and step of ``generate(prefill_chunk_size=k)`` against a no-cache forward of the unpadded row.

Rows of 13, 5 and 9 tokens (the first unpadded), chunks of 4 and 5 (a chunk boundary inside the padding and one
inside the shortest row), eager and sdpa attention, RoPE and absolute-position architectures. Where the release
is affected the same run with the patches off must show the defect (or upstream's "without a cache" error), so a
test that cannot fail would show. Releases without ``prefill_chunk_size`` (before 4.51) skip.
"""

from __future__ import annotations

import pytest

import hf_genfix
from padding_models import model_of, patches_decided  # noqa: F401 (autouse fixture)
from hf_genfix.oracles import DefectObserved
from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps, left_pad
from hf_genfix.oracles.sliding import prompts

PATCHES = ("padding-prefill-chunks", "sliding-window-prefill-chunks")
ARCHS = ["llama", "gpt2", "mistral", "qwen2", "gpt_neox", "phi3"]


def _chunking_exists() -> None:
    from transformers import GenerationConfig

    if not hasattr(GenerationConfig(), "prefill_chunk_size"):
        pytest.skip("generate() has no prefill_chunk_size before 4.51 (measured: 4.50.3)")


def _installed() -> bool:
    return any(s.state in ("applied", "forced") for s in hf_genfix.status() if s.id in PATCHES)


def _run(model, rows, chunk):
    from hf_genfix.oracles.generation import uncompiled

    ids, mask = left_pad(rows)
    with uncompiled() as no_compile:  # 4.51 compiles the chunk loop unconditionally (minutes on CPU)
        run = generate_steps(model, ids, mask, max_new_tokens=6, pad_token_id=0, eos_token_id=None,
                             prefill_chunk_size=chunk, **no_compile)
    return check_rows_against_reference(model, rows, run, f"chunks of {chunk}", eos_token_id=[])


def _no_default_cache(exc: ValueError) -> None:
    # 4.51 gives some architectures (gpt2, gpt_neox) no default cache, and its loop refuses to run; the patch
    # leaves upstream's error as it is.
    if "without a cache" in str(exc):
        pytest.skip(f"upstream refuses chunked prefill for this architecture here: {exc}")
    raise exc


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("chunk", [4, 5])
def test_left_padded_chunked_prefill_matches_each_row_alone(arch, attn, chunk):
    _chunking_exists()
    model = model_of(arch, attn_implementation=attn)
    rows = prompts(13, 5, 9, seed=chunk)
    try:
        figures = _run(model, rows, chunk)
    except ValueError as exc:
        _no_default_cache(exc)
    assert figures["steps_compared"] == 18


def test_the_patches_are_what_makes_it_right():
    """Inside the measured range the same scenario fails with the patches switched off."""
    _chunking_exists()
    if not _installed():
        pytest.skip("no chunked-prefill patch applies to this release (right upstream or outside 4.51-5.2)")
    from packaging.version import Version

    import transformers

    if Version(Version(transformers.__version__).base_version).release[:2] == (5, 1):
        pytest.skip("5.1's loop gives a left-padded batch its mask positions (measured right without the patches); "
                    "its patch is for sliding and static caches")
    model = model_of("llama")
    rows = prompts(13, 5, 9, seed=4)
    with hf_genfix.disabled(*PATCHES):
        with pytest.raises((DefectObserved, ValueError)):
            _run(model, rows, 4)
    _run(model, rows, 4)
