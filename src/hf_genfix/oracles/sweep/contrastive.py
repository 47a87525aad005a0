"""``doctor --sweep`` scenarios: contrastive search (``penalty_alpha``, ``top_k``) ≡ its definition.

Contrastive search picks, at each step, among the ``top_k`` most likely next tokens ``v`` the one that maximizes
``(1 - alpha) * p(v) - alpha * max_j cos(h_v, h_j)``: ``p`` the model's probability of ``v`` after the sequence so
far, ``h_v`` the last layer's hidden state of ``v`` appended to it, ``h_j`` those of the sequence's own tokens
(padding never among them). generate() computes it with the cache: it expands the cache to the ``top_k``
candidates, runs them in one batch, keeps the chosen one's entries and crops or reorders the rest away at every
step -- cache operations a greedy, beam or assisted run never makes, on every architecture with a KV cache.

The oracle is each row alone, without a cache, step by step: every step's logits as the no-cache forward of the
row (``check_rows_against_reference``, its greedy-token check off: the choice is not greedy), and every chosen
token as the definition's choice computed from no-cache forwards of the row so far and of each candidate appended
to it. Where the two best scores are within ``TIE`` of each other the choice is a numerical tie: the row is
compared up to there.

``contrastive``: two unpadded rows of 10 tokens; ``contrastive-padded``: rows of 7, 3 and 10 tokens, left-padded
(the padding id suppressed on both sides, as in ``left-padded``). Built into generate() up to 4.55; from 4.56 it is
a Hub repository (``transformers-community/contrastive-search``), which the sweep does not fetch: skipped there.
"""

from __future__ import annotations

from typing import Any, Callable

from ..generation import SUPPRESSED, check_rows_against_reference, generate_steps, left_pad
from ..outcome import DefectObserved, ProbeSkipped
from ..reference import forward_takes, reference_logits
from .core import Subject, scenario
from .families import ENCODER_DECODER, Seq2SeqSubject

ALPHA, TOP_K, NEW_TOKENS = 0.6, 4, 4
TIE = 1e-4  # two candidates' scores this close: either is the definition's choice in float32


def _built_in() -> None:
    from transformers.generation.utils import GenerationMixin

    if not hasattr(GenerationMixin, "_contrastive_search"):
        raise ProbeSkipped("contrastive search is not built into this release's generate() (a Hub repository)")


def _last_hidden(model: Any, tokens: list[list[int]]) -> tuple[Any, Any]:
    """(logits, last layer's hidden states) of one no-cache forward over unpadded rows of one length."""
    import torch

    ids = torch.tensor(tokens, dtype=torch.long, device=model.device)
    extra = dict(use_cache=False) if forward_takes(model, "use_cache") else {}
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True, **extra)
    return out.logits.float(), _hidden(out, "hidden_states")


def _hidden(out: Any, name: str) -> Any:
    hidden = getattr(out, name, None)
    if not hidden:
        raise ProbeSkipped("the model's forward returns no hidden states: contrastive search's definition needs them")
    return hidden[-1].float()


Forward = Callable[[int, "list[list[int]]"], "tuple[Any, Any]"]


def _check_choices(forward: Forward, rows: list[list[int]], run: Any, what: str, suppressed: bool) -> int:
    """Each row's chosen tokens against the definition's choice (``forward(row index, sequences)``: logits and
    last hidden states of a no-cache forward of the row's sequences); the number of steps compared."""
    import torch

    compared = 0
    for b, prompt in enumerate(rows):
        new = run.new_tokens(b)[: len(run.step_logits)]
        for t, token in enumerate(new):
            sequence = list(prompt) + new[:t]
            logits, context = forward(b, [sequence])
            last = logits[0, -1].clone()
            if suppressed:
                last[0] = SUPPRESSED
            probs = torch.softmax(last, dim=-1)
            top_probs, candidates = torch.topk(probs, TOP_K)
            _, hidden = forward(b, [sequence + [int(c)] for c in candidates])
            next_hidden = torch.nn.functional.normalize(hidden[:, -1], dim=-1)
            past = torch.nn.functional.normalize(context[0], dim=-1)
            penalty = (next_hidden @ past.T).max(dim=-1).values
            scores = (1.0 - ALPHA) * top_probs - ALPHA * penalty
            order = torch.argsort(scores, descending=True)
            best, runner_up = float(scores[order[0]]), float(scores[order[1]])
            compared += 1
            if token != int(candidates[order[0]]):
                if best - runner_up <= TIE and token == int(candidates[order[1]]):
                    break  # a numerical tie: either is the choice; the rest of the row follows another path
                chosen = [int(c) for c in candidates]
                gap = best - float(scores[chosen.index(token)]) if token in chosen else float("inf")
                raise DefectObserved(
                    f"{what}: row {b} (prompt {len(prompt)} tokens), generated step {t}: token {token} is not "
                    f"contrastive search's choice {chosen[int(order[0])]} (candidates {chosen}, scores "
                    f"{[round(float(x), 4) for x in scores]}) by no-cache forwards of the row alone",
                    max_logit_diff=gap, row=b, step=t)
            if best - runner_up <= TIE:
                break
    return compared


def _contrastive(s: Subject, rows: list[list[int]], what: str, padded: bool) -> dict:
    _built_in()
    ids, mask = left_pad(rows)
    options: dict[str, Any] = dict(penalty_alpha=ALPHA, top_k=TOP_K, pad_token_id=0, eos_token_id=None)
    if padded:
        options["suppress_tokens"] = [0]
    run = generate_steps(s.model, ids.to(s.model.device), mask.to(s.model.device), max_new_tokens=NEW_TOKENS,
                         **options)
    reference = None
    if padded:
        for logits in run.step_logits:
            logits[:, 0] = SUPPRESSED

        def reference(b: int, tokens: list[int]) -> Any:
            ref = reference_logits(s.model, tokens).clone()
            ref[:, 0] = SUPPRESSED
            return ref

    figures = check_rows_against_reference(s.model, rows, run, what, eos_token_id=[], check_tokens=False,
                                           reference=reference)
    figures["choices_compared"] = _check_choices(lambda b, seqs: _last_hidden(s.model, seqs), rows, run, what,
                                                 suppressed=padded)
    return figures


@scenario("contrastive", needs=("kv",))
def contrastive(s: Subject) -> dict:
    """Two rows of 10 tokens, contrastive search: every step's logits and choice as the definition's."""
    return _contrastive(s, s.rows(10, 10, seed=21), f"contrastive search (penalty_alpha={ALPHA}, top_k={TOP_K})",
                        padded=False)


@scenario("contrastive-padded", needs=("kv", "padding"))
def contrastive_padded(s: Subject) -> dict:
    """Rows of 7, 3 and 10 tokens left-padded, contrastive search: each row as the definition gives it alone."""
    return _contrastive(s, s.rows(7, 3, 10, seed=22), "contrastive search, left-padded batch vs each row alone",
                        padded=True)


@scenario("s2s-contrastive", needs=("padding",), kind=ENCODER_DECODER)
def s2s_contrastive(s: Seq2SeqSubject) -> dict:
    """A right-padded encoder batch (7, 3 and 10 tokens), contrastive search: every step's logits and choice as the
    definition gives them from no-cache forwards of each unpadded encoder row (the decoder's hidden states)."""
    import dataclasses

    import torch

    from ..generation import right_pad

    _built_in()
    rows = s.rows(7, 3, 10, seed=23)
    ids, mask = right_pad(rows, device=s.model.device)
    run = generate_steps(s.model, ids, mask, max_new_tokens=NEW_TOKENS, penalty_alpha=ALPHA, top_k=TOP_K)
    run = dataclasses.replace(run, prompt_width=1)  # the decoder's prompt: its start token
    starts = [[int(run.sequences[b, 0])] for b in range(len(rows))]
    what = "encoder-decoder contrastive search, right-padded encoder batch vs each row alone"
    figures = check_rows_against_reference(s.model, starts, run, what, eos_token_id=[], check_tokens=False,
                                           reference=lambda b, tokens: s.reference(rows[b], tokens))

    def forward(b: int, sequences: list[list[int]]) -> tuple[Any, Any]:
        enc = torch.tensor([rows[b]] * len(sequences), device=s.model.device)
        dec = torch.tensor(sequences, device=s.model.device)
        with torch.no_grad():
            out = s.model(input_ids=enc, attention_mask=torch.ones_like(enc), decoder_input_ids=dec,
                          use_cache=False, output_hidden_states=True)
        return out.logits.float(), _hidden(out, "decoder_hidden_states")

    figures["choices_compared"] = _check_choices(forward, starts, run, what, suppressed=False)
    return figures
