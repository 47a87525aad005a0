"""``doctor --sweep`` scenarios: a padded batch ≡ each row alone, for every generation option that reads the ids.

Each scenario takes one option of ``generate()`` (a logits processor or warper transformers builds from the
generation config, beam search with ``num_return_sequences``, group and constrained beam search and DoLa where the
release has them built in, ``stop_strings``, several eos ids) and runs it on
three prompts of different lengths (7, 3 and 10 tokens) laid out three ways (``processor-<option>``: the first
two; ``processor-<option>-right``: the third, where upstream is wrong for every option and hf_genfix's
``right-padding`` realigns the batch):

- ``left``: left padding, pad id 0, eos id 1;
- ``right``: right padding, pad id 0, eos id 1;
- ``pad-eos``: left padding with the eos token as pad (pad == eos == 1, the usual setting for Llama/GPT-2 models).

The oracle is each row generated alone with the same option (no padding at all): the batch row must pick the same
tokens, stop where the row alone stops, and see the same processed scores at every step (``output_scores``: what
the processors made of the logits; ``-inf`` where the row alone has ``-inf``, the rest within the dtype's
tolerance). A step where the scores agree but the greedy tokens part is a numerical tie: compared up to there.

The sampling warpers (``top_k``, ``top_p``, ``min_p``, ``typical_p``, ``epsilon``/``eta`` cutoffs, ``top_h``,
temperature) never read the ids, and sampled tokens depend on how many rows draw from one generator: their batch
is sampled (fixed seed) and each row's processed scores at step ``t`` are compared with the row alone prompted
with its prompt and the ``t`` tokens the batch sampled for it (one step, same option).

``min_length`` (like ``max_length``) counts the padded width by design -- ``generate()`` implements
``min_new_tokens`` as ``min_length`` = padded width + ``min_new_tokens`` -- so the row alone is given a
``min_length`` shorter by its padding.

An option the installed release does not have is ``skipped``; one it refuses in words is ``unsupported``. These
processors do not depend on the architecture, so the scenarios run on four of them (``ARCHS``: Llama-like, GPT-2,
a mixture of experts, a sliding window); ``doctor --sweep --quick`` runs them on Llama only, on one layout each
and four of the right-padded ones (``sweep.pick``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..generation import left_pad, right_pad
from ..outcome import DefectObserved, ProbeSkipped, run_parts
from ..precision import tolerance
from .core import QUICK_FIRST, Subject, pick, scenario

ARCHS = ("llama", "gpt2", "mixtral", "mistral")
QUICK_FIRST.append(ARCHS[0])  # a quick sweep's sample of architectures always has one of them
LENGTHS = (7, 3, 10)
STEPS = 6
PAD, EOS = 0, 1


def _arch(s: Subject) -> None:
    archs = pick(ARCHS, 1)  # on --quick the first one only
    if s.model_type not in archs:
        raise ProbeSkipped(f"the processor scenarios run on {', '.join(archs)} only (they do not depend on the "
                           "architecture)")


def _has(*fields: str) -> None:
    from transformers import GenerationConfig

    config = GenerationConfig()
    missing = [f for f in fields if not hasattr(config, f)]
    if missing:
        raise ProbeSkipped(f"generate() has no {', '.join(missing)} on this release")


def _batch(rows: Sequence[Sequence[int]], layout: str) -> tuple[Any, Any, dict[str, Any]]:
    pad = EOS if layout == "pad-eos" else PAD
    ids, mask = (right_pad if layout == "right" else left_pad)(rows, pad_id=pad)
    return ids, mask, {"pad_token_id": pad, "eos_token_id": EOS}


def _generate(model: Any, ids: Any, mask: Any, **kwargs: Any) -> Any:
    import torch

    args = dict(do_sample=False, max_new_tokens=STEPS, return_dict_in_generate=True, output_scores=True)
    args.update(kwargs)
    with torch.no_grad():
        return model.generate(ids, attention_mask=mask, **args)


def _alone(model: Any, row: Sequence[int], **kwargs: Any) -> Any:
    import torch

    ids = torch.tensor([list(row)], device=model.device)
    return _generate(model, ids, torch.ones_like(ids), **kwargs)


def _new(seq: Any, width: int, stops: set[int]) -> list[int]:
    """The tokens a row generated, up to and including the first eos."""
    out = seq[width:].tolist()
    for t, tok in enumerate(out):
        if tok in stops:
            return out[: t + 1]
    return out


def _scores_differ(a: Any, b: Any) -> str:
    """'' when the processed scores agree: the same -inf entries, the rest within tolerance."""
    import torch

    a, b = a.float().cpu(), b.float().cpu()
    fa, fb = torch.isfinite(a), torch.isfinite(b)
    if not torch.equal(fa, fb):
        where = (fa != fb).nonzero().flatten().tolist()[:4]
        return f"tokens {where} are -inf in one and not the other"
    if fa.any():
        diff = float((a[fa] - b[fb]).abs().max())
        if diff > tolerance():
            token = int(((a - b).abs().masked_fill(~fa, 0)).argmax())
            return f"max |score diff| {diff:.3g} (token {token})"
    return ""


def rows_of(lengths: Sequence[int], vocab: int, seed: int = 11) -> list[list[int]]:
    """Prompts of these lengths drawn from ids 3 .. vocab - 1 (never the pad 0 or the eos 1), as ``Subject.rows``."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    return [torch.randint(3, vocab, (n,), generator=gen, device="cpu").tolist() for n in lengths]


def check_rows(model: Any, rows: Sequence[Sequence[int]], layout: str, what: str,
               alone: Callable[[int, int], dict] | None = None, **options: Any) -> dict:
    """Greedy batch vs each row alone: same tokens, same stop, same processed scores at every step. ``alone(length,
    width)``: options that differ for a row alone (a length that counts the padded width by design)."""
    ids, mask, special = _batch(rows, layout)
    options = dict(special, **options)
    batch = _generate(model, ids, mask, **options)
    stops = _stops(options)
    width, steps = ids.shape[1], 0
    for b, row in enumerate(rows):
        single = _alone(model, row, **dict(options, **(alone(len(row), width) if alone else {})))
        want = _new(single.sequences[0], len(row), stops)
        got = batch.sequences[b, width:].tolist()
        for t, token in enumerate(want):
            differ = _scores_differ(batch.scores[t][b], single.scores[t][0])
            if differ:
                raise DefectObserved(f"{what} ({layout}): row {b} (prompt {len(row)} of {width}), step {t}: "
                                     f"processed scores differ from the row alone: {differ}", row=b, step=t)
            if got[t] != token:
                break  # the scores agree within the tolerance: a numerical tie, compared up to here
            steps += 1
        else:
            if len(want) < len(got) and any(tok != options["pad_token_id"] for tok in got[len(want):]):
                raise DefectObserved(f"{what} ({layout}): row {b} (prompt {len(row)} of {width}) stops after "
                                     f"{len(want)} tokens alone and goes on in the batch: {got}", row=b,
                                     step=len(want))
    return {"steps_compared": steps}


def _stops(options: dict[str, Any]) -> set[int]:
    eos = options.get("eos_token_id")
    return {eos} if isinstance(eos, int) else set(eos or ())


def check_sampled(model: Any, rows: Sequence[Sequence[int]], layout: str, what: str, **options: Any) -> dict:
    """A sampled batch: each row's processed scores at step t vs the row alone given the t tokens it sampled."""
    import torch

    ids, mask, special = _batch(rows, layout)
    options = dict(special, do_sample=True, **options)
    torch.manual_seed(0)
    batch = _generate(model, ids, mask, **dict(options, max_new_tokens=3))
    width, stops, steps = ids.shape[1], _stops(options), 0
    for b, row in enumerate(rows):
        new = _new(batch.sequences[b], width, stops)
        for t in range(len(new)):
            alone = _alone(model, list(row) + new[:t], **dict(options, max_new_tokens=1))
            differ = _scores_differ(batch.scores[t][b], alone.scores[0][0])
            if differ:
                raise DefectObserved(f"{what} ({layout}, sampled): row {b} (prompt {len(row)} of {width}), step "
                                     f"{t}: processed scores differ from the row alone: {differ}", row=b, step=t)
            steps += 1
    return {"steps_compared": steps}


def check_beams(model: Any, rows: Sequence[Sequence[int]], layout: str, what: str, **options: Any) -> dict:
    """Beam search (with several returned sequences): each row's beam scores at every step, its sequences and their
    scores as the row alone has them."""
    ids, mask, special = _batch(rows, layout)
    options = dict(special, output_scores=True, **options)
    batch = _generate(model, ids, mask, **options)
    per = options.get("num_return_sequences", 1)
    width, stops = ids.shape[1], _stops(options)
    beams = options.get("num_beams", 1)
    for b, row in enumerate(rows):
        alone = _alone(model, row, **options)
        for t in range(min(len(alone.scores), len(batch.scores))):  # each beam's scores while the row is open
            differ = _scores_differ(batch.scores[t][b * beams:(b + 1) * beams], alone.scores[t])
            if differ:
                raise DefectObserved(f"{what} ({layout}): row {b} (prompt {len(row)} of {width}), step {t}: the "
                                     f"beams' scores differ from the row alone: {differ}", row=b, step=t)
        for k in range(per):
            want = _new(alone.sequences[k], len(row), stops)
            got = _new(batch.sequences[b * per + k], width, stops)
            a, w = float(batch.sequences_scores[b * per + k]), float(alone.sequences_scores[k])
            if got != want or abs(a - w) > 1e-3:
                raise DefectObserved(f"{what} ({layout}): row {b} (prompt {len(row)} of {width}), sequence {k}: "
                                     f"{got} (score {a:.5g}) in the batch, {want} (score {w:.5g}) alone", row=b,
                                     step=_first_diff(got, want))
    return {"sequences_compared": len(rows) * per}


def _first_diff(a: Sequence[int], b: Sequence[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


# -- the options ------------------------------------------------------------------------------------------------
Check = Callable[..., dict]
_NAMES: list[str] = []
QUICK_RIGHT = 4  # right-padded scenarios run on --quick (the others are sampled out)


def _register(name: str, check: Check, fields: Sequence[str] = (), options: Callable[[Subject], dict] | None = None,
              **fixed: Any) -> None:
    """Two scenarios: ``processor-<name>`` (left padding, then pad == eos; on --quick one of them, in turn) and
    ``processor-<name>-right`` (right padding: upstream is wrong there for every option, hf_genfix's right-padding
    realigns the batch, so it is a scenario of its own that leaves the other's differential bitwise)."""
    index = len(_NAMES)
    _NAMES.append(name)

    def runner(layouts: Sequence[str], sample: bool) -> Callable[[Subject], dict]:
        def run(s: Subject) -> dict:
            _arch(s)
            if sample and name not in pick(_NAMES, QUICK_RIGHT):
                raise ProbeSkipped(f"quick sweep: {QUICK_RIGHT} of the {len(_NAMES)} right-padded scenarios run")
            _has(*fields)
            kwargs = dict(fixed, **(options(s) if options else {}))
            rows = s.rows(*LENGTHS, seed=11)
            chosen = pick(layouts, 1)
            try:
                # Each layout a part of its own: the differential judges them one by one (one corrected, one
                # wrong both ways is not "another wrong output").
                figures = run_parts(chosen, lambda layout: check(s.model, rows, layout, name, **kwargs))
            except ValueError as exc:
                if "trust_remote_code" not in str(exc):
                    raise
                # 4.56+: group and constrained beam search, DoLa live in Hub repos (custom_generate): not offline.
                raise ProbeSkipped(f"{name}: the generation mode is downloaded from the Hub on this release") from exc
            return {"layouts": ", ".join(chosen), **{k: sum(f.get(k, 0) for f in figures) for k in figures[0]}}

        shown = ", ".join(f"{k}={v!r}" for k, v in fixed.items() if not callable(v)) or "see the options"
        run.__doc__ = f"{name} ({shown}): a padded batch ({', '.join(layouts)}) against each row alone"
        return run

    padded = ("left", "pad-eos")[index % 2:] + ("left", "pad-eos")[: index % 2]
    scenario(f"processor-{name}", needs=("padding",))(runner(padded, False))
    scenario(f"processor-{name}-right", needs=("padding",))(runner(("right",), True))


def _watermark(s: Subject) -> dict:
    from transformers.generation import WatermarkingConfig

    # A context wider than the 3-token row: alone its first steps are not seeded, in the batch its padding is.
    return {"watermarking_config": WatermarkingConfig(bias=2.5, context_width=4, seeding_scheme="selfhash")}


def _synthid(s: Subject) -> dict:
    try:
        from transformers.generation import SynthIDTextWatermarkingConfig
    except ImportError as exc:
        raise ProbeSkipped("no SynthID text watermarking on this release") from exc
    # n-grams of 5: the 3-token row's first contexts would reach into the padding.
    return {"watermarking_config": SynthIDTextWatermarkingConfig(keys=[654, 400, 836, 123, 340, 443, 597, 160],
                                                                 ngram_len=5)}


def _bad_words(s: Subject) -> dict:
    (row,) = s.rows(LENGTHS[0], seed=11)[:1]
    return {"bad_words_ids": [[5], [row[-2], row[-1]]]}


def _sequence_bias(s: Subject) -> dict:
    (row,) = s.rows(LENGTHS[0], seed=11)[:1]
    return {"sequence_bias": {(5,): 3.0, (row[-1], 9): -4.0, (PAD,): 2.0}}


def _stop_strings(s: Subject) -> dict:
    from ..tokenizers import load_tokenizer

    tok = load_tokenizer("gpt2")
    # The 3rd token the first row picks alone, as text: that row stops there, the others where they meet it.
    rows = s.rows(*LENGTHS, seed=11)
    first = _alone(s.model, rows[0], pad_token_id=PAD, eos_token_id=EOS)
    text = tok.decode(first.sequences[0, len(rows[0]) + 2:len(rows[0]) + 3])
    if not text.strip():
        raise ProbeSkipped("the token the stop string would be made of decodes to blank text")
    return {"stop_strings": [text], "tokenizer": tok}


def _eos_per_row(s: Subject) -> dict:
    rows = s.rows(*LENGTHS, seed=11)
    ends = []
    for row in rows[:2]:  # the 3rd token of the first two rows alone: each stops on its own eos
        out = _alone(s.model, row, pad_token_id=PAD, eos_token_id=EOS)
        ends.append(int(out.sequences[0, len(row) + 2]))
    return {"eos_token_id": [EOS] + ends}


_register("repetition-penalty", check_rows, repetition_penalty=1.8)
_register("encoder-repetition-penalty", check_rows, encoder_repetition_penalty=1.8)
_register("no-repeat-ngram-1", check_rows, no_repeat_ngram_size=1)
_register("no-repeat-ngram-2", check_rows, no_repeat_ngram_size=2)
_register("bad-words", check_rows, options=_bad_words)
# min_length counts the padded width, as max_length does (generate() implements min_new_tokens as min_length =
# padded width + min_new_tokens): alone, a row's min_length is shorter by its padding.
_register("min-length", check_rows, min_length=9, alone=lambda length, width: {"min_length": 9 - (width - length)})
_register("min-new-tokens", check_rows, min_new_tokens=3)
_register("suppress-tokens", check_rows, suppress_tokens=[5, 7])
_register("begin-suppress-tokens", check_rows, begin_suppress_tokens=[5, 7])
_register("sequence-bias", check_rows, ("sequence_bias",), options=_sequence_bias)
_register("forced-bos-eos", check_rows, forced_bos_token_id=5, forced_eos_token_id=EOS)
_register("exponential-decay", check_rows, exponential_decay_length_penalty=(2, 1.5))
_register("remove-invalid-values", check_rows, remove_invalid_values=True)
_register("guidance-scale", check_rows, ("guidance_scale",), guidance_scale=1.5)
_register("watermark", check_rows, ("watermarking_config",), options=_watermark)
_register("synthid-watermark", check_rows, ("watermarking_config",), options=_synthid)
_register("stop-strings", check_rows, ("stop_strings",), options=_stop_strings)
_register("eos-per-row", check_rows, options=_eos_per_row)
_register("temperature", check_sampled, temperature=0.7)
_register("top-k", check_sampled, top_k=5)
_register("top-p", check_sampled, top_p=0.8)
_register("min-p", check_sampled, ("min_p",), min_p=0.1)
_register("typical-p", check_sampled, typical_p=0.8)
_register("epsilon-cutoff", check_sampled, epsilon_cutoff=0.02)
_register("eta-cutoff", check_sampled, eta_cutoff=0.02)
_register("top-h", check_sampled, ("top_h",), top_h=0.5)
_register("beam-return-sequences", check_beams, num_beams=3, num_return_sequences=2, early_stopping=True)
_register("beam-repetition-penalty", check_beams, num_beams=2, repetition_penalty=1.8, early_stopping=True)
_register("group-beam-diversity", check_beams, num_beams=4, num_beam_groups=2, diversity_penalty=1.0,
          early_stopping=True)
_register("constrained-beam", check_beams, num_beams=3, force_words_ids=[[5]], early_stopping=True)
_register("dola", check_rows, dola_layers="low")
