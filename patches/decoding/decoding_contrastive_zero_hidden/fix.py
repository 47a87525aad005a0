"""decoding-contrastive-zero-hidden: contrastive search on a left-padded batch turns into greedy search for a row
whose padding leaves a last hidden state of zeros (GPT-OSS on 4.55).

The defect. Contrastive search scores each of the ``top_k`` candidates by its probability minus ``penalty_alpha``
times its degeneration penalty, the largest cosine similarity between the candidate's last hidden state and those
of the tokens before it. ``_ranking_fast`` divides every context hidden state by its norm, then adds the dtype's
minimum at the padding positions (``cosine_matrix_mask``) so that the maximum ignores them. A padding position
whose hidden state is exactly zero gives ``0 / 0 = NaN``, and ``NaN + min`` is still NaN: the maximum is NaN, so
is every candidate's score, and ``max`` picks the first candidate, the most probable token. The padded row is
silently decoded greedily, from its first token. GPT-OSS's hidden state at a left pad is exactly zero: the pad's
query sees only masked keys, its attention sink takes all the weight (the output is ``0 * V``), and the zero pad
embedding stays zero through the bias-free layers of a freshly built model. Measured with the sweep's tiny
GPT-OSS (contrastive-padded: rows of 7, 3 and 10 tokens, ``top_k=4``, ``penalty_alpha=0.6``): 4.55.0 - 4.55.4
choose token 92 for row 0 where the definition chooses 3 (scores -0.291 and -0.157); the unpadded batch and greedy
decoding of the padded one are right. 4.56 moved contrastive search out of transformers (a Hub repository).

Detection (``probe``): the sweep's contrastive-padded scenario on its tiny GPT-OSS: every row's choice at every
step against contrastive search's definition computed from no-cache forwards of the row alone.

Correction. ``_ranking_fast`` is wrapped. Where a padding position (mask 0) has a context hidden state of norm
zero, that position's vector is replaced by ones for this call (a copy: the caller's tensor is not touched), so its
cosine is finite and the mask removes it as upstream intends. Nothing else changes: no such position, the call is
upstream's (bitwise); a zero vector at a real token (mask 1) is left to upstream, as is a candidate's own zero
hidden state (what its cosine should be is not ours to say).
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments, recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

TARGET = "transformers.generation.utils:_ranking_fast"


def install(patcher: Any) -> None:
    patcher.require(TARGET, "context_hidden", "cosine_matrix_mask")
    patcher.wrap(TARGET, _ranking_fast)


def _ranking_fast(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    if record.on:
        record.seen()
    call = bound_arguments(wrapped, args, kwargs)
    context, mask = call.get("context_hidden"), call.get("cosine_matrix_mask")
    if not (torch.is_tensor(context) and torch.is_tensor(mask)) or context.dim() != 3 \
            or tuple(mask.shape) != tuple(context.shape[:2]):
        return record.through(wrapped, args, kwargs)
    blank = (mask == 0) & (context.norm(dim=-1) == 0)
    if not bool(blank.any()):
        # no padding position without a direction: upstream's answer stands
        return record.through(wrapped, args, kwargs)
    call["context_hidden"] = context.masked_fill(blank.unsqueeze(-1), 1.0)
    if record.on:
        record.changed("%d padding position(s) with a zero hidden state kept out of the degeneration penalty",
                       int(blank.sum()))
    return wrapped(**call)
