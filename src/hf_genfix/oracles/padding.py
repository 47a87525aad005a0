"""Padding oracles: batched generation against each row alone, and what a tokenizer must do to pad a batch.

Built on ``generation.py`` (``right_pad`` / ``left_pad`` / ``generate_steps`` / ``check_rows_against_reference``);
the probes of the padding family and ``tests/padding`` both use these functions.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from .generation import Rows, check_rows_against_reference, generate_steps, left_pad, right_pad
from .outcome import DefectObserved

# Special ids of the tiny models (oracles.tiny): prompts avoid them so that no prompt token is a pad or an eos.
_FIRST_ORDINARY_ID = 3

# The padding side AutoTokenizer gives each local layout (oracles.tokenizers) on 4.x, measured on
# 4.46.3, 4.53.3, 4.56.2 and 4.57.6: the defaults 5.x must keep unless the repo or the caller asks otherwise.
PADDING_SIDE_4X = {"llama3": "right", "llama2": "left", "mistral": "left", "gpt2": "right", "qwen2": "right",
                   "gemma": "left"}


def ragged_rows(lengths: Sequence[int], vocab_size: int = 128, seed: int = 0) -> list[list[int]]:
    """Deterministic prompts of the given lengths, made of ordinary ids (never pad, bos or eos)."""
    rng = random.Random(seed)
    return [[rng.randrange(_FIRST_ORDINARY_ID, vocab_size) for _ in range(n)] for n in lengths]


def check_right_padded_generate(
    model: Any, rows: Rows, pad_id: int | None = None, max_new_tokens: int = 4, what: str = "right-padded batch",
    **generate_kwargs: Any,
) -> dict[str, Any]:
    """Greedy ``generate()`` on the right-padded batch of ``rows``; every row and step against the reference.

    ``generate_kwargs`` may drop the mask (``attention_mask=None``) or add any ``generate()`` argument.
    """
    if pad_id is None:
        pad_id = _pad_of(model)
    ids, mask = right_pad(rows, pad_id)
    kwargs: dict[str, Any] = {"attention_mask": mask, "pad_token_id": pad_id}
    kwargs.update(generate_kwargs)
    run = generate_steps(model, ids, max_new_tokens=max_new_tokens, **kwargs)
    figures = check_rows_against_reference(model, rows, run, what)
    figures["rows"] = len(rows)
    return figures


def check_same_as_left_padded(
    model: Any, rows: Rows, pad_id: int | None = None, seed: int | None = None, what: str = "right-padded batch",
    **generate_kwargs: Any,
) -> dict[str, Any]:
    """The right-padded batch gives every row the new tokens (and scores) of the caller-left-padded batch.

    The oracle for what cannot be checked step by step against a forward pass: sampling (the same ``seed``
    before each run), beam search, streamers. Returns both outputs' figures; raises ``DefectObserved``.
    """
    import torch

    if pad_id is None:
        pad_id = _pad_of(model)
    outputs = []
    for pad in (left_pad, right_pad):
        ids, mask = pad(rows, pad_id)
        if seed is not None:
            torch.manual_seed(seed)
        with torch.no_grad():
            out = model.generate(ids, attention_mask=mask, pad_token_id=pad_id, **generate_kwargs)
        outputs.append((ids, out))
    (left_ids, left), (right_ids, right) = outputs
    left_seq = getattr(left, "sequences", left)
    right_seq = getattr(right, "sequences", right)
    width = left_ids.shape[1]
    if left_seq.shape != right_seq.shape or not torch.equal(left_seq[:, width:], right_seq[:, width:]):
        raise DefectObserved(
            f"{what}: new tokens differ from the same rows left-padded by the caller "
            f"(shapes {tuple(left_seq.shape)} vs {tuple(right_seq.shape)})"
        )
    worst = 0.0
    for name in ("scores", "logits", "sequences_scores"):
        a, b = getattr(left, name, None), getattr(right, name, None)
        if a is None:
            continue
        pairs = zip(a, b) if isinstance(a, (tuple, list)) else [(a, b)]
        for x, y in pairs:
            finite = torch.isfinite(x) & torch.isfinite(y)
            if not torch.equal(torch.isfinite(x), torch.isfinite(y)):
                raise DefectObserved(f"{what}: {name} differ from the left-padded batch (-inf pattern)")
            diff = float((x[finite] - y[finite]).abs().max()) if finite.any() else 0.0
            worst = max(worst, diff)
            if diff > 1e-4:
                raise DefectObserved(f"{what}: {name} differ from the left-padded batch by {diff:.3g}",
                                     max_logit_diff=diff)
    return {"max_score_diff": worst, "rows": len(rows), "sequences": tuple(right_seq.shape)}


def check_padding_side(tokenizer: Any, expected: str, what: str) -> dict[str, Any]:
    side = getattr(tokenizer, "padding_side", None)
    if side != expected:
        raise DefectObserved(f"{what}: padding side {side!r}, expected {expected!r} (the 4.x default)")
    return {"padding_side": side}


def check_can_pad(tokenizer: Any, what: str, texts: Sequence[str] = ("hello world", "the fox")) -> dict[str, Any]:
    """``tokenizer(texts, padding=True)`` works, with an existing token as pad (the vocabulary unchanged)."""
    size = len(tokenizer)
    try:
        batch = tokenizer(list(texts), padding=True)
    except ValueError as exc:
        if "padding token" not in str(exc):
            raise
        raise DefectObserved(f"{what}: {exc}") from exc
    if len(tokenizer) != size:
        raise DefectObserved(f"{what}: padding added tokens ({size} -> {len(tokenizer)})")
    pad = tokenizer.pad_token_id
    if pad is None or pad >= size:
        raise DefectObserved(f"{what}: pad token id {pad} is not an existing token")
    lengths = {len(ids) for ids in batch["input_ids"]}
    if len(lengths) != 1:
        raise DefectObserved(f"{what}: rows not padded to one width ({sorted(lengths)})")
    return {"pad_token_id": pad, "vocab": size}


def _pad_of(model: Any) -> int:
    pad = getattr(getattr(model, "generation_config", None), "pad_token_id", None)
    if pad is None:
        pad = getattr(model.config, "pad_token_id", None)
    return 0 if pad is None else int(pad)
