"""The decode-loop oracles: a hand-written greedy loop built on ``model.prepare_inputs_for_generation``.

This is how custom loops, speculative-decoding and RL libraries and serving code use the method: each step
they pass only the whole sequence so far, the cache the last forward returned and the attention mask, and feed
what comes back to ``forward``. Every step's last logits must equal the reference (a no-cache forward over the
unpadded row, ``generation.check_rows_against_reference``). Two callers: one that grows the mask by a column of
ones per new token, and one that never grows it (the method must complete it).
"""

from __future__ import annotations

from typing import Any, Sequence

from .generation import GenRun, check_rows_against_reference, left_pad
from .outcome import DefectObserved
from .tiny import tiny_model

# Prompts of different lengths, so that the batch is left-padded; no pad (0), bos (1) or eos (2) inside.
DEFAULT_ROWS: tuple[tuple[int, ...], ...] = (
    (17, 44, 91, 23, 5),
    (60, 12, 77, 38, 101, 9, 64, 30),
    (88, 41, 7),
)

# What a broken decode step raises on the releases measured (shape errors, None where a tensor was needed).
UPSTREAM_ERRORS = (TypeError, ValueError, RuntimeError, AttributeError, IndexError)


def manual_loop(
    model: Any,
    rows: Sequence[Sequence[int]] = DEFAULT_ROWS,
    steps: int = 4,
    grow_mask: bool = True,
    cache_key: str = "past_key_values",
    feed: str = "full",
    pad_id: int = 0,
) -> GenRun:
    """Greedy decoding by hand: ``prepare_inputs_for_generation(ids, <cache_key>=cache, attention_mask=mask)``
    then ``forward`` on what it returned, ``steps`` times. Returns the per-step last logits like generate_steps.
    With ``grow_mask=False`` the caller keeps passing the prompt's mask; with ``feed="new"`` it passes only the
    last token after the first step (the classic loop) instead of the whole sequence."""
    import torch

    from ..helpers.decode import cache_from_outputs

    ids, mask = left_pad(rows, pad_id)
    width = ids.shape[1]
    cache = None
    step_logits = []
    with torch.no_grad():
        for _ in range(steps):
            given = ids if feed == "full" or cache is None else ids[:, -1:]
            inputs = model.prepare_inputs_for_generation(given, **{cache_key: cache}, attention_mask=mask)
            out = model(**inputs)
            logits = out.logits[:, -1, :]
            step_logits.append(logits)
            cache = cache_from_outputs(out)
            ids = torch.cat([ids, logits.argmax(-1, keepdim=True)], dim=-1)
            if grow_mask:
                mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=-1)
    return GenRun(sequences=ids, step_logits=step_logits, prompt_width=width)


def check_manual_loop(
    model_or_type: Any,
    grow_mask: bool = True,
    rows: Sequence[Sequence[int]] = DEFAULT_ROWS,
    steps: int = 4,
    cache_key: str = "past_key_values",
    feed: str = "full",
    **tiny_overrides: Any,
) -> dict[str, Any]:
    """Run ``manual_loop`` on a model (or a tiny model of that type) and compare every step with the reference;
    an upstream exception inside the loop is the defect showing and is re-raised as ``DefectObserved``."""
    model = tiny_model(model_or_type, **tiny_overrides) if isinstance(model_or_type, str) else model_or_type
    name = getattr(getattr(model, "config", None), "model_type", type(model).__name__)
    how = f"{'mask grown' if grow_mask else 'mask never grown'}, {feed} ids, cache as {cache_key}"
    what = f"{name}: manual loop over prepare_inputs_for_generation ({how})"
    try:
        run = manual_loop(model, rows, steps, grow_mask=grow_mask, cache_key=cache_key, feed=feed)
    except UPSTREAM_ERRORS as exc:
        raise DefectObserved(f"{what}: {type(exc).__name__}: {exc}", error=type(exc).__name__) from exc
    return check_rows_against_reference(model, rows, run, what)
