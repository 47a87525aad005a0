"""Sweep scenarios for two equivalences that hold by definition (issue 26, equivalences 2 and 3).

- ``inputs_embeds`` ≡ ``input_ids``: ``generate(inputs_embeds=E(ids))`` gives the tokens and logits that
  ``generate(ids)`` gives, unpadded and left-padded, and with the length options that count the prompt
  (``max_length``, ``min_length``, ``min_new_tokens``). Options that read the prompt's ids (repetition penalty,
  ``no_repeat_ngram_size``) are checked with ``generate(ids, inputs_embeds=E(ids))``, the documented way to give
  them the prompt. With ``inputs_embeds`` alone there are no prompt ids for them to see: transformers warns, it
  does not refuse, and the option keeps a defined meaning -- it acts on the generated tokens only -- so that call
  is judged too (``inputs-embeds-penalties``: each row of a padded batch against the definition applied to its own
  no-cache reference), not called unsupported: a warning is not a refusal.
- cached ≡ uncached: ``use_cache=False`` (``uncached``, every model) and every cache implementation the release
  knows (``cache-implementations``: ``offloaded``, ``offloaded_static``, ``sliding_window``, ``hybrid``,
  ``quantized``; ``static`` is the sweep's ``static-cache``, the default cache its ``cached``) each give, step by
  step, the logits of a no-cache forward of the final sequence. An implementation the release does not know, or
  that the model or the machine refuses in words (no backend for ``quantized``, no GPU for an offloaded cache), is
  listed as unsupported in the figures, not judged; one that crashes otherwise is judged as upstream's exception
  (``upstream-error`` where it raises the same without hf_genfix), one that is silently wrong is the finding.
  ``chunked-prefill-cache-implementations``: ``prefill_chunk_size`` into each pre-allocated one (``static``,
  ``sliding_window``, ``hybrid``) is the whole prefill, judged the same way.

The oracles are the shared ones (``generation.check_rows_against_reference``: every step against the reference
forward of each unpadded row; ``reference.max_diff``). ``sweep.pick`` samples the options and the cache
implementations on ``doctor --sweep --quick``; the full sweep runs them all.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ..generation import SUPPRESSED, GenRun, check_rows_against_reference, generate_steps, left_pad
from ..outcome import CRASHED_PARTS, PASSED_PARTS, WRONG_PARTS, DefectObserved, ProbeSkipped, scenario_part
from ..precision import tolerance
from ..reference import max_diff, reference_logits
from .core import _UNSUPPORTED, WINDOW, Subject, _chunking, _short, pick, scenario

# What the option sweep compares: name -> generate() options, on top of greedy, pad 0 and no eos unless set.
# "eos" is replaced by the token the plain run gives first (so that without the option the run would stop at
# once); "prompt+N" by the prompt's length plus N (an option that counts the prompt).
OPTIONS: dict[str, dict[str, Any]] = {
    "max_length": {"max_length": "prompt+4", "max_new_tokens": None},
    "min_new_tokens": {"min_new_tokens": 3, "eos_token_id": "eos"},
    "min_length": {"min_length": "prompt+3", "eos_token_id": "eos"},
    "repetition_penalty": {"repetition_penalty": 1.8, "with_ids": True},
    "no_repeat_ngram_size": {"no_repeat_ngram_size": 1, "with_ids": True},
}
BY_ROW = ("repetition_penalty and no_repeat_ngram_size with inputs_embeds alone (no prompt ids: they act on the "
          "generated tokens only) are judged row by row in inputs-embeds-penalties")
CACHES = ("offloaded", "offloaded_static", "sliding_window", "hybrid", "quantized")
# A refusal in words: the sweep's own list, and how a release names an implementation it does not know.
# A machine without a GPU is a refusal; a CUDA error on one is not (hence no bare "cuda").
_REFUSALS = _UNSUPPORTED + ("invalid `cache_implementation`", "choose one of", "not compiled with cuda",
                            "cuda is not available", "no cuda gpus", "requires a gpu", "please install",
                            "install it", "you need to install", "no module named", "is not a valid")


def _embeds_problem(s: Subject) -> str:
    """Why the model cannot be given ``inputs_embeds`` ("" when it can)."""
    if "inputs_embeds" not in inspect.signature(s.model.forward).parameters:
        return "its forward takes no inputs_embeds"
    if "inputs_embeds" not in inspect.signature(s.model.prepare_inputs_for_generation).parameters:
        # generate() refuses it in words for such a model ("doesn't have its forwarding implemented").
        return "its prepare_inputs_for_generation takes no inputs_embeds (generate() refuses them)"
    try:
        table = s.model.get_input_embeddings()
    except Exception as exc:  # noqa: BLE001 - NotImplementedError on models without one table
        return f"no input embedding table ({type(exc).__name__})"
    if table is None:
        return "no input embedding table"
    return _forward_differs(s)


def _forward_differs(s: Subject) -> str:
    """The equivalence needs the embedding table's output to be what the forward builds from the ids. A model
    that transforms the looked-up embeddings inside its forward (4.46's OpenLlama: a layer norm when it looked
    them up itself) treats ``inputs_embeds`` as another input: one no-cache forward tells."""
    import torch

    (row,) = s.rows(6, seed=13)
    ids = torch.tensor([row], device=s.model.device)
    try:
        with torch.no_grad():
            by_ids = s.model(input_ids=ids, use_cache=False).logits
            by_embeds = s.model(inputs_embeds=_embed(s, ids), use_cache=False).logits
    except Exception:  # noqa: BLE001 - a forward that refuses embeddings: the scenarios say how
        return ""
    diff = max_diff(by_ids, by_embeds)
    if diff <= tolerance():
        return ""
    return (f"its forward treats inputs_embeds otherwise than the ids they embed ({diff:.3g} in one no-cache "
            "forward): not the same input")


def _embed(s: Subject, ids: Any) -> Any:
    import torch

    with torch.no_grad():
        return s.model.get_input_embeddings()(ids)


def _same_run(what: str, expected: GenRun, actual: GenRun) -> dict[str, Any]:
    """``actual`` (sequences of new tokens only when the prompt was given as embeddings) generates the new tokens
    of ``expected`` with the same per-step logits."""
    want = [expected.new_tokens(b) for b in range(expected.sequences.shape[0])]
    got = [actual.new_tokens(b) for b in range(actual.sequences.shape[0])]
    if got != want:
        step = next((t for a, b in zip(got, want) for t, (x, y) in enumerate(zip(a, b)) if x != y),
                    min(len(got[0]), len(want[0])))
        raise DefectObserved(f"{what}: new tokens {got} != {want} with input_ids", step=step)
    worst = 0.0
    for t, (a, b) in enumerate(zip(actual.step_logits, expected.step_logits)):
        diff = max_diff(a.masked_fill(a == b, 0), b.masked_fill(a == b, 0))  # a token both suppress: -inf, -inf
        worst = max(worst, diff)
        if not diff <= tolerance():
            raise DefectObserved(f"{what}: step {t}: max |logit diff| {diff:.3g} against the input_ids run",
                                 max_logit_diff=diff, step=t)
    return {"max_logit_diff": worst, "steps": len(want[0])}


def _declines_embeds(s: Subject) -> str:
    problem = _embeds_problem(s)
    return f"the model cannot take inputs_embeds: {problem}" if problem else ""


@scenario("inputs-embeds")
def inputs_embeds(s: Subject) -> dict:
    """Two rows of 7 tokens given as their embeddings: each step as the no-cache forward of the row."""
    import torch

    rows = s.rows(7, 7, seed=11)
    ids = torch.tensor(rows, device=s.model.device)
    stop = dict(pad_token_id=0, eos_token_id=None)
    run = generate_steps(s.model, None, torch.ones_like(ids), max_new_tokens=5, inputs_embeds=_embed(s, ids), **stop)
    return check_rows_against_reference(s.model, rows, run, "generate(inputs_embeds=) vs no-cache forward",
                                        eos_token_id=[])


@scenario("inputs-embeds-padded", needs=("padding",))
def inputs_embeds_padded(s: Subject) -> dict:
    """A left-padded batch given as embeddings (the pads' embeddings masked out): each row as alone."""
    rows = s.rows(7, 3, 9, seed=12)
    ids, mask = left_pad(rows)
    run = generate_steps(s.model, None, mask, max_new_tokens=5, inputs_embeds=_embed(s, ids), pad_token_id=0,
                         eos_token_id=None)
    return check_rows_against_reference(s.model, rows, run, "left-padded generate(inputs_embeds=) vs each row alone",
                                        eos_token_id=[])


@scenario("inputs-embeds-options")
def inputs_embeds_options(s: Subject) -> dict:
    """The length options that count the prompt, and the penalties that read it, with the prompt as embeddings:
    the same new tokens and per-step (processed) scores as with ``input_ids``."""
    import torch

    (row,) = s.rows(6, seed=13)
    ids = torch.tensor([row], device=s.model.device)
    mask = torch.ones_like(ids)
    embeds = _embed(s, ids)
    base = dict(max_new_tokens=5, pad_token_id=0, eos_token_id=None, output_scores=True, output_logits=False)
    plain = generate_steps(s.model, ids, mask, **base)
    # The input_ids runs are the oracle of the embeds runs: first they must be right themselves (no processor here,
    # so the scores are the logits), or two equally wrong runs would pass.
    check_rows_against_reference(s.model, [row], plain, "generate(input_ids) before the options", eos_token_id=[])
    worst, checked = 0.0, []
    for name in pick(OPTIONS, 2):
        options = dict(base)
        for key, value in OPTIONS[name].items():
            if value == "eos":
                value = plain.new_tokens(0)[0]
            elif isinstance(value, str) and value.startswith("prompt+"):
                value = len(row) + int(value[len("prompt+"):])
            options[key] = value
        with_ids = options.pop("with_ids", False)  # max_new_tokens=None stays: generate() then counts max_length
        expected = generate_steps(s.model, ids, mask, **options)
        given = dict(options, inputs_embeds=embeds)
        actual = generate_steps(s.model, ids if with_ids else None, mask, **given)
        how = "generate(ids, inputs_embeds=)" if with_ids else "generate(inputs_embeds=)"
        worst = max(worst, _same_run(f"{how} with {name}", expected, actual)["max_logit_diff"])
        checked.append(name)
    # Figures are plain values (the sweep keeps scalars): what was compared, and what is not by contract.
    return {"max_logit_diff": worst, "options": ", ".join(checked), "alone": BY_ROW}


def _penalised(logits: Any, generated: list[int], penalty: float) -> Any:
    """``RepetitionPenaltyLogitsProcessor`` by its definition: each token already generated has its logit divided
    by ``penalty`` when positive, multiplied when negative."""
    out = logits.clone()
    for token in set(generated):
        value = out[token]
        out[token] = value / penalty if value > 0 else value * penalty
    return out


def _banned(logits: Any, generated: list[int], _size: int) -> Any:
    """``no_repeat_ngram_size=1`` by its definition: every token already generated is banned (-inf)."""
    out = logits.clone()
    if generated:
        out[list(set(generated))] = float("-inf")
    return out


# The options that read the ids, with inputs_embeds alone: name -> (generate() options, the definition applied to a
# reference step's logits given the row's generated tokens so far).
PENALTIES: dict[str, tuple[dict[str, Any], Any]] = {
    "repetition_penalty": ({"repetition_penalty": 1.8}, lambda logits, new: _penalised(logits, new, 1.8)),
    "no_repeat_ngram_size": ({"no_repeat_ngram_size": 1}, lambda logits, new: _banned(logits, new, 1)),
}


@scenario("inputs-embeds-penalties", needs=("padding",))
def inputs_embeds_penalties(s: Subject) -> dict:
    """A left-padded batch of 3 rows given as ``inputs_embeds`` alone, with ``repetition_penalty`` and with
    ``no_repeat_ngram_size``: no prompt ids, so each option acts on the row's own generated tokens only (transformers
    warns about that; it is not a refusal). Every step's processed scores (``output_scores``) must be the row's
    no-cache reference logits with the option applied over the tokens that row generated before the step."""
    rows = s.rows(7, 3, 9, seed=15)
    ids, mask = left_pad(rows)
    embeds = _embed(s, ids)
    worst, checked = 0.0, []
    for name in pick(PENALTIES, 2):
        options, definition = PENALTIES[name]
        run = generate_steps(s.model, None, mask, max_new_tokens=5, inputs_embeds=embeds, pad_token_id=0,
                             eos_token_id=None, output_scores=True, output_logits=False, **options)
        for b, row in enumerate(rows):
            new = run.new_tokens(b)
            reference = reference_logits(s.model, list(row) + new)
            for t in range(len(new)):
                expected = definition(reference[len(row) - 1 + t].float(), new[:t])
                actual = run.step_logits[t][b].float()
                same = actual == expected  # both -inf where the definition bans a token
                diff = max_diff(actual.masked_fill(same, 0), expected.masked_fill(same, 0))
                worst = max(worst, diff)
                if not diff <= tolerance():
                    raise DefectObserved(
                        f"generate(inputs_embeds=) with {name} (no prompt ids: over the generated tokens only): row "
                        f"{b} (prompt {len(row)} tokens), step {t}: max |score diff| {diff:.3g} against the "
                        f"definition applied to the row's no-cache forward", max_logit_diff=diff, row=b, step=t)
                if int(actual.argmax()) != new[t] and int(expected.argmax()) != new[t]:
                    raise DefectObserved(f"generate(inputs_embeds=) with {name}: row {b}, step {t}: token {new[t]} "
                                         f"is not the greedy choice {int(expected.argmax())} of the definition",
                                         max_logit_diff=diff, row=b, step=t)
        checked.append(name)
    return {"max_logit_diff": worst, "options": ", ".join(checked)}


@scenario("inputs-embeds-prefill-chunks", needs=("kv", "padding"))
def inputs_embeds_prefill_chunks(s: Subject) -> dict:
    """``generate(ids, inputs_embeds=E, prefill_chunk_size=3)`` on a left-padded batch whose prompt embeddings are
    not those of its ids (a soft prompt, an image's features merged in: what a multimodal model's ``generate``
    hands its language model). Each row, each step, against the no-cache forward of that row's own embeddings
    followed by its new tokens' embeddings. With ``E`` the embeddings of the ids (the other embeds scenarios), a
    chunk loop that reads the ids instead of ``E`` would look right: the offset makes it loud."""
    import torch

    _chunking()
    rows = s.rows(9, 5, seed=16)
    ids, mask = left_pad(rows)
    ids, mask = ids.to(s.model.device), mask.to(s.model.device)
    table = s.model.get_input_embeddings()
    with torch.no_grad():
        embeds = table(ids)
        # A fixed offset per position, a third of the table's own scale: far from every id's embedding.
        gen = torch.Generator().manual_seed(16)
        offset = torch.randn(embeds.shape[1:], generator=gen).to(embeds.device, embeds.dtype)
        embeds = embeds + offset * (embeds.float().std() / 3).to(embeds.dtype)
    run = generate_steps(s.model, ids, mask, max_new_tokens=4, inputs_embeds=embeds, pad_token_id=0,
                         eos_token_id=None, prefill_chunk_size=3)
    width = ids.shape[1]

    def reference(b: int, tokens: Any) -> Any:
        row = embeds[b, width - len(rows[b]):]
        new = torch.as_tensor(list(tokens)[len(rows[b]):], dtype=torch.long, device=s.model.device)
        with torch.no_grad():
            whole = torch.cat([row, table(new)], 0)[None]
            return s.model(inputs_embeds=whole, use_cache=False).logits[0].float()

    return check_rows_against_reference(
        s.model, rows, run, "left-padded generate(ids, inputs_embeds=E) with prefill_chunk_size=3 vs each row's "
        "own embeddings", eos_token_id=[], reference=reference)


for _func in (inputs_embeds, inputs_embeds_padded, inputs_embeds_options, inputs_embeds_penalties,
              inputs_embeds_prefill_chunks):
    _func.declines = _declines_embeds  # type: ignore[attr-defined]


def _refused(exc: BaseException) -> bool:
    kinds = (ValueError, NotImplementedError, ImportError, RuntimeError, TypeError, AssertionError)
    return isinstance(exc, kinds) and any(word in str(exc).lower() for word in _REFUSALS)


def _two_rows(s: Subject) -> tuple[list[list[int]], Any, Any]:
    import torch

    rows = s.rows(10, 10, seed=14)
    ids = torch.tensor(rows, device=s.model.device)
    return rows, ids, torch.ones_like(ids)


@scenario("uncached")
def uncached(s: Subject) -> dict:
    """``use_cache=False``: generate() runs the whole sequence every step; each step as the no-cache forward."""
    rows, ids, mask = _two_rows(s)
    run = generate_steps(s.model, ids, mask, max_new_tokens=6, use_cache=False, pad_token_id=0, eos_token_id=None)
    return check_rows_against_reference(s.model, rows, run, "generate(use_cache=False)", eos_token_id=[])


@scenario("cache-implementations", needs=("kv",))
def cache_implementations(s: Subject) -> dict:
    """Each cache implementation the release knows: every step as the no-cache forward of the final row."""
    rows, ids, mask = _two_rows(s)

    def generate(name: str) -> Any:
        return generate_steps(s.model, ids, mask, max_new_tokens=6, cache_implementation=name, pad_token_id=0,
                              eos_token_id=None)

    return _each_implementation(s, pick(CACHES, 2), generate, rows, "cache_implementation={}")


# Chunked prefill into each pre-allocated cache: a static cache with sliding layers took chunks past the window
# wrong on 4.51-4.55 ("hybrid", "sliding_window"; sliding-window-static-prefill-chunks), which the chunked-prefill
# scenario met only where the model's default cache is static (Gemma-2/3 on 4.51-4.52): recall missed it on 4.54.0.
CHUNKED_CACHES = ("static", "sliding_window", "hybrid")


@scenario("chunked-prefill-cache-implementations", needs=("kv",))
def chunked_prefill_cache_implementations(s: Subject) -> dict:
    """``prefill_chunk_size=5`` into each pre-allocated cache implementation, a prompt past the sweep's window: every
    step as the no-cache forward of the row (chunked prefill is the whole prefill, whatever the cache)."""
    import torch

    _chunking()
    rows = s.rows(2 * WINDOW + 3, seed=15)
    ids = torch.tensor(rows, device=s.model.device)
    mask = torch.ones_like(ids)

    def generate(name: str) -> Any:
        return generate_steps(s.model, ids, mask, max_new_tokens=4, cache_implementation=name, prefill_chunk_size=5,
                              pad_token_id=0, eos_token_id=None)

    return _each_implementation(s, pick(CHUNKED_CACHES, 2), generate, rows,
                                "prefill_chunk_size=5, cache_implementation={}")


# A left-padded batch into each pre-allocated cache: batch ≡ rows whatever the cache. The static-cache scenario
# runs one row and cache-implementations two of the same length, so a pre-allocated cache never met padding there.
PADDED_CACHES = ("static", "sliding_window", "hybrid")


@scenario("left-padded-cache-implementations", needs=("kv", "padding"))
def left_padded_cache_implementations(s: Subject) -> dict:
    """Rows of 7, 3 and 10 tokens, left-padded, into each pre-allocated cache implementation: every step as the
    no-cache forward of the row alone (the padding id is suppressed on both sides, as in ``left-padded``)."""
    rows = s.rows(7, 3, 10, seed=16)
    ids, mask = left_pad(rows)

    def generate(name: str) -> Any:
        run = generate_steps(s.model, ids, mask, max_new_tokens=5, cache_implementation=name, suppress_tokens=[0],
                             pad_token_id=0, eos_token_id=None)
        for logits in run.step_logits:
            logits[:, 0] = SUPPRESSED
        return run

    def reference(b: int, tokens: list[int]) -> Any:
        ref = reference_logits(s.model, tokens).clone()
        ref[:, 0] = SUPPRESSED
        return ref

    return _each_implementation(s, pick(PADDED_CACHES, 2), generate, rows,
                                "left-padded batch, cache_implementation={}", reference=reference)


def _each_implementation(s: Subject, names: list[str], generate: Callable[[str], Any], rows: list[list[int]],
                         what: str, reference: Callable[[int, list[int]], Any] | None = None) -> dict:
    """``generate(name)`` for each implementation in ``names``, every step as the no-cache forward of ``rows``.
    Silently wrong anywhere: the finding (``DefectObserved``); else a crash of one that upstream does not share: that
    exception; else the worst figure of those that ran (``ProbeSkipped`` when none did)."""
    refused: dict[str, str] = {}
    loud: dict[str, str] = {}
    wrong: list[str] = []
    wrong_names: list[str] = []
    crashed: list[str] = []
    worst, ran, first_defect = 0.0, [], None
    crash: BaseException | None = None
    for name in names:
        _fresh(s.model)
        # Each implementation is a part of its own: the differential judges the finding run by run (a run
        # hf_genfix corrects beside one it leaves bitwise upstream's is not "another wrong output").
        with scenario_part(name):
            try:
                run = generate(name)
            except Exception as exc:  # noqa: BLE001 - a refusal in words is not a finding; anything else is judged
                if _refused(exc):
                    refused[name] = f"{type(exc).__name__}: {_short(exc)}"
                    continue
                if _upstream_raises_alike(s, generate, name, exc):
                    # Loud in upstream too, for this implementation: listed, and the others are still judged (4.46's
                    # offloaded_static TypeError on every model hid sliding_window's silent error on Gemma-2 there).
                    loud[name] = f"upstream raises it too: {type(exc).__name__}: {_short(exc)}"
                    continue
                crash = crash or exc
                crashed.append(name)
                wrong.append(f"{name}: {type(exc).__name__}: {_short(exc)}")
                continue
            try:
                figures = check_rows_against_reference(s.model, rows, run, what.format(name), eos_token_id=[],
                                                       reference=reference)
            except DefectObserved as exc:
                wrong.append(exc.message)
                wrong_names.append(name)
                first_defect = first_defect or exc.figures
                continue
        worst = max(worst, figures["max_logit_diff"])
        ran.append(name)
    if first_defect is not None:  # silently wrong somewhere: the finding (with any crash of the others)
        raise DefectObserved("; ".join(wrong), **{**first_defect, WRONG_PARTS: ",".join(wrong_names),
                                                  PASSED_PARTS: ",".join(ran), CRASHED_PARTS: ",".join(crashed)})
    if crash is not None:  # loud only: judged as upstream's exception (same without hf_genfix: upstream-error)
        raise crash
    refusals = "; ".join(f"{k}: {v}" for k, v in {**refused, **loud}.items())
    if not ran:
        raise ProbeSkipped(f"no cache implementation ran: {refusals}")
    return {"max_logit_diff": worst, "caches": ", ".join(ran), "unsupported": refusals}


def _fresh(model: Any) -> None:
    """Drop the static cache generate() keeps on the model (``_cache``) and reuses in the next call: one left
    half-built by a call that raised makes the next call raise otherwise (5.12.0 Zamba2 with a static cache:
    KeyError 'mamba' from a fresh call, AttributeError after a failed one)."""
    vars(model).pop("_cache", None)


def _upstream_raises_alike(s: Subject, generate: Callable[[str], Any], name: str, exc: BaseException) -> bool:
    """Whether ``generate(name)`` with every patch off raises too: the same type, or each inside transformers' own
    code (``differential.loud_alike``; 4.56.2's Qwen-2-MoE and PhiMoE, chunked prefill into a static sliding cache:
    upstream's IndexError in the cache, with sliding-window-static-chunk past it the model's own mask, 8 wide, against
    10 keys: loud both ways, no answer added)."""
    import hf_genfix

    from .. import differential

    _fresh(s.model)
    try:
        with hf_genfix.disabled():
            generate(name)
    except Exception as upstream:  # noqa: BLE001
        return differential.loud_alike(upstream, exc)
    return False

