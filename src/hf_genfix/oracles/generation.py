"""The generation oracle: every step's logits of a batched, cached ``generate()`` against the reference.

For each row, the reference is one forward pass without cache over that row's unpadded prompt followed by the
tokens generated for it; step ``t`` of the run must match the reference at the position just before token
``t`` (within the dtype's tolerance: float32, atol 1e-4, see ``precision``) and the greedy token must be the one
the reference picks.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from .outcome import DefectObserved
from .precision import current, tolerance
from .reference import max_diff, reference_logits

Rows = Sequence[Sequence[int]]


def left_pad(rows: Rows, pad_id: int = 0, device: Any = None) -> tuple[Any, Any]:
    """(input_ids, attention_mask) with every row aligned to the right (padding on the left), on ``device``
    (default: the current ``precision()`` device)."""
    return _pad(rows, pad_id, left=True, device=device)


def right_pad(rows: Rows, pad_id: int = 0, device: Any = None) -> tuple[Any, Any]:
    """(input_ids, attention_mask) with every row aligned to the left (padding on the right), on ``device``."""
    return _pad(rows, pad_id, left=False, device=device)


def _pad(rows: Rows, pad_id: int, left: bool, device: Any = None) -> tuple[Any, Any]:
    import torch

    width = max(len(r) for r in rows)
    device = current().device if device is None else device
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        span = slice(width - len(row), width) if left else slice(0, len(row))
        ids[i, span] = torch.as_tensor(list(row), dtype=torch.long)
        mask[i, span] = 1
    return ids.to(device), mask.to(device)


@dataclass
class GenRun:
    """What a ``generate()`` call produced: sequences and the raw logits of each step, per row."""

    sequences: Any  # (batch, prompt_width + steps)
    step_logits: list  # steps x (batch, vocab)
    prompt_width: int

    def new_tokens(self, row: int) -> list[int]:
        return self.sequences[row, self.prompt_width :].tolist()


def generate_cache_keyword(model: Any) -> str:
    """The keyword ``model.generate()`` takes a cache under on this release: ``cache`` from 5.24 (which deprecates
    ``past_key_values``, to be removed in 6.0), ``past_key_values`` before."""
    from ..helpers.decode import renames_keyword

    return "cache" if renames_keyword(type(model).generate, "past_key_values") else "past_key_values"


# A suppressed token's logit, written on both sides of an oracle (what generate() chose among, and the reference):
# finite, so their difference is 0 (the sweep's padding id, never generated: ``suppress_tokens=[0]``).
SUPPRESSED = -1e4


def generate_steps(
    model: Any,
    input_ids: Any,
    attention_mask: Any = None,
    max_new_tokens: int = 8,
    **generate_kwargs: Any,
) -> GenRun:
    """Greedy ``generate()`` (unless ``generate_kwargs`` say otherwise) recording each step's raw logits."""
    import torch

    kwargs: dict[str, Any] = dict(do_sample=False, max_new_tokens=max_new_tokens, return_dict_in_generate=True)
    kwargs.update(generate_kwargs)
    kwargs.setdefault("output_logits", True)
    if attention_mask is not None:
        kwargs["attention_mask"] = attention_mask
    if "past_key_values" in kwargs:
        # 5.24 deprecates generate(past_key_values=) for cache=: the oracle calls as a user of this release would.
        kwargs[generate_cache_keyword(model)] = kwargs.pop("past_key_values")
    with torch.no_grad():
        out = model.generate(input_ids, **kwargs)
    logits = getattr(out, "logits", None) or out.scores
    width = input_ids.shape[1] if input_ids is not None else 0
    return GenRun(sequences=out.sequences, step_logits=list(logits), prompt_width=width)


def check_rows_against_reference(
    model: Any,
    rows: Rows,
    run: GenRun,
    what: str,
    atol: float | None = None,  # default: the current dtype's tolerance
    eos_token_id: int | Sequence[int] | None = None,  # default: the model's generation_config
    check_tokens: bool = True,
    reference: Any = None,  # reference(row index, tokens) -> logits; default: reference_logits(model, tokens)
) -> dict[str, Any]:
    """Compare every row and step of ``run`` with the no-cache reference; raise ``DefectObserved`` on the first
    mismatch (naming row, step and logit difference), else return figures (max diff, steps compared).
    ``reference``: the no-cache forward where the row alone is more than its tokens (an encoder-decoder's
    decoder with that row's encoder input, an image-text model with that row's image)."""
    atol = tolerance(atol)
    if eos_token_id is None:
        # Rows that finished are padded afterwards; their later "steps" are not the model's choice.
        eos_token_id = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    eos = {eos_token_id} if isinstance(eos_token_id, int) else set(eos_token_id or ())
    worst, compared = 0.0, 0
    for b, prompt in enumerate(rows):
        new = run.new_tokens(b)[: len(run.step_logits)]
        for t, token in enumerate(new):
            if token in eos:
                new = new[: t + 1]
                break
        ref = reference(b, list(prompt) + new) if reference else reference_logits(model, list(prompt) + new)
        for t in range(len(new)):
            expected = ref[len(prompt) - 1 + t]
            actual = run.step_logits[t][b]
            diff = max_diff(actual, expected)
            worst = max(worst, diff)
            compared += 1
            if not diff <= atol:
                raise DefectObserved(
                    f"{what}: row {b} (prompt {len(prompt)} tokens), generated step {t}: "
                    f"max |logit diff| {diff:.3g} vs a no-cache forward of the unpadded row (atol {atol})",
                    max_logit_diff=diff,
                    row=b,
                    step=t,
                )
            if check_tokens and int(actual.argmax()) != new[t] and int(expected.argmax()) != new[t]:
                raise DefectObserved(
                    f"{what}: row {b}, step {t}: generated token {new[t]} is not the greedy choice "
                    f"{int(expected.argmax())} of the reference",
                    max_logit_diff=diff,
                    row=b,
                    step=t,
                )
    return {"max_logit_diff": worst, "steps_compared": compared}


@contextlib.contextmanager
def uncompiled() -> Iterator[dict]:
    """``generate()`` arguments (and a context) that run chunked prefill uncompiled.

    4.51's chunk loop always torch.compiles the forward (minutes on CPU, for a probe of a second); positions do
    not depend on it. Without fullgraph, which refuses a frame dynamo was told to skip.
    """
    import torch
    from transformers import CompileConfig

    with torch._dynamo.config.patch(disable=True):
        yield {"compile_config": CompileConfig(fullgraph=False)}
