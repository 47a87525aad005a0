"""Shared by tests/sliding_window/test_*.py: tiny models built once per module run, the release, and
the skips for scenarios outside issue 5's range."""

from __future__ import annotations

import pytest

from hf_genfix.oracles import ProbeSkipped
from hf_genfix.oracles import sliding as sw

_models: dict = {}


@pytest.fixture(autouse=True)
def patches_decided():
    from hf_genfix.doctor import import_targets

    import_targets()


def model(name: str, attn: str = "eager", seed: int = 0):
    """``oracles.sliding.sliding_model(name)``, built once (skip where the release cannot build it)."""
    key = (name, attn, seed)
    if key not in _models:
        try:
            _models[key] = sw.sliding_model(name, attn=attn, seed=seed)
        except ProbeSkipped as exc:
            pytest.skip(str(exc))
    return _models[key]


def release():
    import transformers
    from packaging.version import Version

    return Version(Version(transformers.__version__).base_version)


def at_least(version: str) -> bool:
    from packaging.version import Version

    return release() >= Version(version)


def skip_old_gemma2(name: str, implementation: str = "", rows: int = 1) -> None:
    """Gemma-2 before 4.53 is right only for one unpadded row with its own HybridCache ("hybrid", which
    "sliding_window" becomes with the patch, or the default): a DynamicCache is off by 0.12, a StaticCache raises,
    a left-padded batch is off by 0.4 and beam search fails in logging on 4.46.3. Outside issue 5's range (its
    evidence starts at 4.53), reported, not patched."""
    if name == "gemma2" and not at_least("4.53.0"):
        if rows != 1 or implementation not in ("default", "hybrid", "sliding_window"):
            pytest.skip("Gemma-2 before 4.53 is only right for one row with its HybridCache")


def skip_shared_kv_before_511(name: str) -> None:
    """On 5.5 Gemma-4's KV-shared layers share only through a cache: without one (the no-cache reference,
    generate(use_cache=False), training) they compute their own keys, so cached and uncached runs differ at the
    first token (0.19-0.31 on the tiny model). 5.11 shares in both. Outside issue 5's list, reported, not patched."""
    if name == "gemma4-shared-kv" and not at_least("5.11.0"):
        pytest.skip("Gemma-4 KV-shared layers ignore sharing without a cache before 5.11: no reference to check")


def check_beam_search_equals_uncached(m, rows, what: str, **generate_kwargs) -> None:
    """Beam search (3 beams, 3x the window) with a cache gives the sequences and scores of beam search without."""
    import torch

    from hf_genfix.oracles import DefectObserved, left_pad

    ids, mask = left_pad(rows)
    common = dict(attention_mask=mask, num_beams=3, do_sample=False, max_new_tokens=3 * sw.WINDOW, pad_token_id=0,
                  eos_token_id=None, return_dict_in_generate=True, output_scores=True)
    with torch.no_grad():
        uncached = m.generate(ids, use_cache=False, **common)
        cached = m.generate(ids, **common, **generate_kwargs)
    if cached.sequences.tolist() != uncached.sequences.tolist():
        raise DefectObserved(f"{what}: beam search sequences differ from the uncached beam search")
    diff = (cached.sequences_scores - uncached.sequences_scores).abs().max().item()
    assert diff <= 1e-4, f"{what}: beam scores differ from the uncached beam search by {diff}"


def check_continuing_with_a_new_turn(m, rows, first: int, turn: int, second: int, what: str, cache=None) -> None:
    """generate() ``first`` tokens (into ``cache`` when given), append a new turn of ``turn`` tokens to every row,
    generate ``second`` more on the returned cache; every step of the second run against the no-cache forward of
    each row's whole sequence."""
    import torch

    from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad
    from hf_genfix.oracles.generation import generate_cache_keyword

    ids, mask = left_pad(rows)
    extra = {} if cache is None else {generate_cache_keyword(m): cache}
    with torch.no_grad():
        out = m.generate(ids, attention_mask=mask, max_new_tokens=first, do_sample=False, pad_token_id=0,
                         eos_token_id=None, return_dict_in_generate=True, **extra)
    new = sw.prompts(*([turn] * len(rows)), seed=7)
    ids2 = torch.cat([out.sequences, torch.tensor(new)], dim=1)
    mask2 = torch.cat([mask, torch.ones((len(rows), first + turn), dtype=mask.dtype)], dim=1)
    rows2 = [row + out.sequences[b, ids.shape[1]:].tolist() + new[b] for b, row in enumerate(rows)]
    run = generate_steps(m, ids2, mask2, max_new_tokens=second, past_key_values=out.past_key_values,
                         pad_token_id=0, eos_token_id=None)
    check_rows_against_reference(m, rows2, run, what, eos_token_id=[])
