"""Drafting oracles: assisted decoding equals plain greedy, and the drafter's cache holds what it should.

``check_same_as_greedy`` (``oracles.sliding``) compares tokens and per-step logits. A drafter whose cache is
rewound to the wrong length can still propose tokens that the target happens to accept or reject the same way,
so tokens alone do not prove the drafter right: ``check_assisted`` also watches every forward of the drafter and
requires its cache to hold exactly the tokens before the ones it is fed, which is what "the drafter's cache is
cropped back to the accepted length" means.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from .outcome import DefectObserved, ProbeSkipped


@contextmanager
def drafter_cache_watch(drafter: Any) -> Iterator[list[tuple[int, int, int]]]:
    """Record (fed tokens, cached tokens, tokens before the fed ones) for every cached forward of ``drafter`` while
    the block runs. The last figure is the width of a 2-D attention mask less the fed tokens or, where no mask is
    passed (5.24 for an unpadded row), the position of the first fed token: one unpadded row is assumed."""
    seen: list[tuple[int, int, int]] = []

    def hook(module: Any, args: tuple, kwargs: dict) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        cache = kwargs.get("past_key_values", kwargs.get("cache"))  # 5.24 renamed the keyword to ``cache``
        mask, positions = kwargs.get("attention_mask"), kwargs.get("position_ids")
        if ids is None or cache is None or not hasattr(cache, "get_seq_length"):
            return
        if mask is not None and mask.dim() == 2:
            before = int(mask.shape[1]) - int(ids.shape[1])
        elif positions is not None:
            before = int(positions[0, 0])
        else:
            return
        seen.append((int(ids.shape[1]), int(cache.get_seq_length()), before))

    handle = drafter.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        yield seen
    finally:
        handle.remove()


@contextmanager
def forward_calls(model: Any) -> Iterator[list[int]]:
    """Count the forwards of ``model`` while the block runs (the list holds one entry per call): a drafting check
    whose drafter never ran proves nothing."""
    calls: list[int] = []
    handle = model.register_forward_pre_hook(lambda module, args: calls.append(1))
    try:
        yield calls
    finally:
        handle.remove()


def check_drafter_cache(seen: Sequence[tuple[int, int, int]], what: str) -> dict[str, Any]:
    """Every recorded drafter forward had a cache of exactly the tokens before the fed ones."""
    if not seen:
        raise AssertionError(f"{what}: the drafter ran no cached forward: nothing was checked")
    for call, (fed, cached, before) in enumerate(seen):
        if cached != before:
            raise DefectObserved(
                f"{what}: drafter forward {call} is fed {fed} tokens at position {before} on a cache of {cached} "
                f"tokens (it should hold {before})", drafter_call=call, extra_cached=cached - before)
    return {"drafter_forwards": len(seen)}


def check_assisted(target: Any, drafter: Any, row: Sequence[int], new_tokens: int, draft_tokens: int,
                   what: str) -> dict[str, Any]:
    """Assisted decoding of ``row`` with ``draft_tokens``-token drafts from ``drafter``: plain greedy's tokens,
    logits equal to a no-cache forward, and a drafter cache that always holds exactly the accepted sequence."""
    import transformers
    from packaging.version import Version

    from .sliding import check_same_as_greedy, drafting

    if Version(Version(transformers.__version__).base_version) < Version("4.46.0"):
        # Measured on 4.40.2, 4.41.2, 4.44.2 and 4.45.2 (tiny llama, 4-token drafts); 4.46.3 is the first that fits.
        raise ProbeSkipped("before 4.46 assisted decoding returns one logits tensor per round, not per token (no "
                           "per-step oracle), and on 4.40 its tokens part from greedy (cache_position, fixed 4.41)")

    with drafter_cache_watch(drafter) as seen:
        figures = check_same_as_greedy(target, row, new_tokens, what, **drafting(drafter, draft_tokens))
    figures.update(check_drafter_cache(seen, what))
    return figures
