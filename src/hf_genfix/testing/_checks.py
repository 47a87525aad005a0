"""The checks ``check_generation`` runs, each a thin driver over the shared oracles in ``hf_genfix.oracles``.

A check gets the model and the prompts, returns figures when the model is right and raises ``DefectObserved``
when it is not (``ProbeSkipped`` when the scenario does not apply). Its message is written for whoever wrote
the model: which prompt and which generated step went wrong, by how much, and -- from the inputs the forward
was actually fed (``_record``) -- what the decode step got wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..oracles.generation import check_rows_against_reference, generate_steps, left_pad
from ..oracles.outcome import DefectObserved, ProbeSkipped
from ._record import diagnose, recording

NOT_AVAILABLE = "oracle not available in this build"


class NotAvailable(Exception):
    """The oracle (or the patch) a check needs is not part of this build of hf_genfix."""


def _oracle(module: str, name: str) -> Any:
    import importlib

    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise NotAvailable(f"{NOT_AVAILABLE} ({module}.{name})") from exc


@dataclass
class Context:
    model: Any
    rows: list[list[int]]
    max_new_tokens: int
    pad_token_id: int
    atol: float
    tokenizer: Any = None
    assistant_model: Any = None
    vocab_size: int = 128
    generate_kwargs: dict[str, Any] = field(default_factory=dict)
    passed: set[str] = field(default_factory=set)  # names of the checks that passed so far

    def tensor(self, rows: Sequence[Sequence[int]]) -> Any:
        import torch

        return torch.as_tensor([list(r) for r in rows], dtype=torch.long, device=_device(self.model))

    def to_device(self, *tensors: Any) -> tuple:
        device = _device(self.model)
        return tuple(t.to(device) for t in tensors)

    def generate(self, input_ids: Any, attention_mask: Any, what: str, prompt_width: int,
                 left_padded: bool = False, **kwargs: Any) -> Any:
        """``generate_steps`` with the forward inputs recorded; a crash becomes a ``DefectObserved`` naming it."""
        options = dict(self.generate_kwargs, pad_token_id=self.pad_token_id, **kwargs)
        with recording(self.model) as calls:
            try:
                run = generate_steps(self.model, input_ids, attention_mask, self.max_new_tokens, **options)
            except Exception as exc:  # noqa: BLE001 - the model crashing inside generate() is the finding
                raise crashed(what, exc, calls, prompt_width, left_padded, model=self.model) from exc
        run.calls = calls
        return run


def crashed(what: str, exc: BaseException, calls: list, prompt_width: int, left_padded: bool,
            call: str = "generate()", model: Any = None) -> DefectObserved:
    """A ``DefectObserved`` for a run that raised: where (step, innermost frame), the recorded causes, and the
    removed transformers APIs that the model's remote code relies on."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        frame = frames[-1]
        where = f" (in {frame.name}, {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno})"
    step = max(len(calls) - 1, 0)
    found = DefectObserved(
        f"{what}: {call} raised {type(exc).__name__} at generated step {step}{where}: {exc}"
        + _causes(diagnose(calls, prompt_width, left_padded, failed_step=step) + removed_api_causes(model)),
        step=step,
        exception=type(exc).__name__,
    )
    found.__cause__ = exc
    return found


def removed_api_causes(model: Any) -> list[str]:
    """One sentence per old transformers API the model's remote code (``trust_remote_code``) relies on."""
    if model is None:
        return []
    from ..toolkit.remote_code import removed_api

    return [f"the model's remote code uses {what}, removed or changed in transformers {release} (restored for "
            f"remote code by hf_genfix patch {patch})" for what, release, patch in removed_api(type(model))]


def _device(model: Any) -> Any:
    device = getattr(model, "device", None)
    if device is None:
        device = next(model.parameters()).device
    return device


def _causes(sentences: list[str]) -> str:
    if not sentences:
        return ""
    return "\n" + "\n".join(f"Likely cause: {s}." for s in sentences)


def _compare(ctx: Context, rows: Sequence[Sequence[int]], run: Any, what: str, against: Callable[[int], str],
             left_padded: bool, explain: Callable[[int], str]) -> dict[str, Any]:
    """The oracle on ``run``; on a mismatch, rewrite its message in terms of prompts and steps, with causes."""
    try:
        return check_rows_against_reference(ctx.model, rows, run, what, atol=ctx.atol)
    except DefectObserved as found:
        figures = dict(found.figures)
        row, step, diff = figures.get("row", 0), figures.get("step", 0), figures.get("max_logit_diff")
        if diff is not None and diff <= ctx.atol:
            how = "the logits agree within atol but the generated token is not the reference's greedy choice"
        else:
            how = f"max |logit diff| {diff:.3g} (atol {ctx.atol:g})"
        message = (f"{what}: {against(row)}, generated step {step} ({_ordinal(step + 1)} new token): {how}."
                   f"\n{explain(step)}")
        message += _causes(diagnose(getattr(run, "calls", []), run.prompt_width, left_padded, failed_step=step))
        raise DefectObserved(message, **figures) from found


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def check_cache(ctx: Context) -> dict[str, Any]:
    """Each prompt alone, greedy ``generate()`` with the cache and without it, against one no-cache forward."""
    worst, steps = 0.0, 0
    for use_cache in (True, False):
        mode = "generate() with the cache" if use_cache else "generate(use_cache=False)"
        for r, row in enumerate(ctx.rows):
            what = f"prompt {r} ({len(row)} tokens) alone, {mode}"
            ids = ctx.tensor([row])
            run = ctx.generate(ids, ids.new_ones(ids.shape), what, len(row), use_cache=use_cache)

            def explain(step: int, use_cache: bool = use_cache) -> str:
                if step > 0 and not use_cache:
                    return ("Without a cache every step feeds forward the whole sequence again, so what differs "
                            "from the reference is the mask or the positions generate() builds for that step "
                            "(transformers 4.40 kept advancing cache_position here, fixed in 4.41).")
                if step > 0:
                    return ("Step 0 (the token right after the prompt) matches, so the forward pass itself is "
                            "right; the decode steps after it are fed wrong inputs: look at "
                            "prepare_inputs_for_generation and at how forward uses the cache, the attention mask "
                            "and the positions once the cache is filled.")
                if use_cache:
                    return ("Already the prompt pass differs when use_cache=True: the forward computes something "
                            "else when it writes a cache (mask or positions derived from the cache, or the cache "
                            "read before it is written).")
                return "Already the prompt pass differs from the same forward pass called directly."

            figures = _compare(ctx, [row], run, what, lambda b: "against one forward pass over the same tokens without cache",
                               False, explain)
            worst, steps = max(worst, figures["max_logit_diff"]), steps + figures["steps_compared"]
    return {"max_logit_diff": worst, "steps_compared": steps}


def padded_rows(ctx: Context) -> list[list[int]]:
    """The prompts as rows of a padded batch: at least two different lengths, so that some row is padded."""
    rows = ctx.rows
    if len({len(r) for r in rows}) < 2:
        rows = rows + [rows[0][len(rows[0]) // 2:] or rows[0]]
    if len({len(r) for r in rows}) < 2:
        raise ProbeSkipped("needs prompts of different lengths (a one-token prompt cannot be shortened)")
    return rows


def check_left_padding(ctx: Context) -> dict[str, Any]:
    """The prompts as one left-padded batch, generated with the cache and without it: every row's steps against
    that row alone, unpadded, without cache."""
    rows = padded_rows(ctx)
    width = max(len(r) for r in rows)
    ids, mask = ctx.to_device(*left_pad(rows, ctx.pad_token_id))

    def where(b: int) -> str:
        return (f"row {b} ({len(rows[b])} tokens after {width - len(rows[b])} pad tokens) against that row alone "
                "in one forward pass without padding or cache")

    def explain(step: int) -> str:
        if "cache" in ctx.passed:
            base = "Each prompt alone generates correctly (check 'cache'), so the padding is what goes wrong. "
        else:
            base = ""
        if step == 0:
            return base + ("Already the prompt pass of the padded rows differs: the pad tokens are not masked "
                           "out, or positions are counted from the first column instead of from each row's "
                           "first real token.")
        return base + ("The prompt pass is right and the decode steps of padded rows drift: the attention mask or "
                       "the positions of the new tokens do not account for the padding.")

    worst, steps = 0.0, 0
    # Without a cache too: every step then rebuilds mask and positions for the whole padded sequence (wrong on
    # 4.40 for llama and gemma, where cache_position kept advancing; fixed in 4.41).
    for use_cache in (True, False):
        what = (f"left-padded batch of {len(rows)} rows (prompt lengths {[len(r) for r in rows]}), "
                + ("generate() with the cache" if use_cache else "generate(use_cache=False)"))
        run = ctx.generate(ids, mask, what, width, left_padded=True, use_cache=use_cache)
        figures = _compare(ctx, rows, run, what, where, True, explain)
        worst, steps = max(worst, figures["max_logit_diff"]), steps + figures["steps_compared"]
    return {"max_logit_diff": worst, "steps_compared": steps}


def check_right_padding(ctx: Context, patches: str) -> dict[str, Any]:
    """The prompts as one right-padded batch, under hf_genfix's ``right-padding`` patch: each row as if alone."""
    import hf_genfix

    check_right_padded_generate = _oracle("hf_genfix.oracles.padding", "check_right_padded_generate")
    if "right-padding" not in {s.id for s in hf_genfix.status()}:
        raise NotAvailable(f"{NOT_AVAILABLE} (no right-padding patch)")
    if patches == "off":
        raise ProbeSkipped("needs hf_genfix's right-padding patch, and patches='off' was asked")
    rows = padded_rows(ctx)
    what = f"right-padded batch of {len(rows)} rows (prompt lengths {[len(r) for r in rows]})"
    with hf_genfix.forced("right-padding"), recording(ctx.model) as calls:
        try:
            return check_right_padded_generate(ctx.model, rows, ctx.pad_token_id, ctx.max_new_tokens, what=what,
                                               **ctx.generate_kwargs)
        except DefectObserved as found:
            explain = (" The patch realigns the batch to left padding before generate(); "
                       + ("as the left-padded batch passes (check 'left-padding'), the realigned inputs reach the "
                          "model differently: does it take per-token inputs the patch does not know of?"
                          if "left-padding" in ctx.passed else "see check 'left-padding' first."))
            raise DefectObserved(found.message + "." + explain, **found.figures) from found
        except Exception as exc:  # noqa: BLE001 - a crash of the model under the patch is the finding
            raise crashed(what, exc, calls, max(len(r) for r in rows), True) from exc


def check_decode_loop(ctx: Context) -> dict[str, Any]:
    """A hand-written greedy loop through ``prepare_inputs_for_generation`` (full ids, the cache, the mask), as
    custom loops, speculative-decoding and serving code use it: once growing the mask, once never growing it."""
    manual_loop = _oracle("hf_genfix.oracles.decode", "manual_loop")
    forward_spec = _oracle("hf_genfix.helpers.decode", "forward_spec")

    rows = padded_rows(ctx)
    width = max(len(r) for r in rows)
    worst, steps = 0.0, 0
    for grow in (True, False):
        caller = "grows the mask by one column per token" if grow else "never grows the mask"
        what = (f"decode loop through prepare_inputs_for_generation whose caller {caller}, left-padded rows "
                f"{[len(r) for r in rows]}")
        with recording(ctx.model) as calls:
            try:
                run = manual_loop(ctx.model, rows, ctx.max_new_tokens, grow_mask=grow,
                                  cache_key=forward_spec(ctx.model).cache_key, pad_id=ctx.pad_token_id)
            except Exception as exc:  # noqa: BLE001 - the step function crashing is the finding
                raise crashed(what, exc, calls, width, True, call="the loop") from exc
        run.calls = calls

        def against(b: int) -> str:
            return f"row {b} ({len(rows[b])} tokens) against that row alone in one forward pass without cache"

        def explain(step: int, grow: bool = grow) -> str:
            return ("prepare_inputs_for_generation is what turns (all tokens so far, the cache, the mask) into "
                    "the next forward's inputs: only the tokens the cache does not hold, a mask over cached + new "
                    "tokens" + ("" if grow else " (completed when the caller did not grow it)")
                    + ", and positions counted from the mask.")

        figures = _compare(ctx, rows, run, what, against, True, explain)
        worst, steps = max(worst, figures["max_logit_diff"]), steps + figures["steps_compared"]
    return {"max_logit_diff": worst, "steps_compared": steps}


def _window(model: Any) -> int | None:
    """The model's sliding window when at least one of its layers slides, else None."""
    windowed = _oracle("hf_genfix.helpers.sliding_window", "WINDOWED_KINDS")
    policy = _oracle("hf_genfix.helpers.sliding_window", "SlidingWindowPolicy")
    config = getattr(model, "config", None)
    try:
        if not set(policy.layer_types(config)) & windowed:
            return None
        return policy.from_config(config).window
    except (ValueError, TypeError, AttributeError):
        return None


# Beyond this the check would stop being a quick test: a tiny test config should use a small window.
MAX_WINDOW = 128


def check_sliding_window(ctx: Context) -> dict[str, Any]:
    """Greedy generation to about three windows, a long row and a short left-padded one, every step against the
    no-cache forward."""
    check_past_window = _oracle("hf_genfix.oracles.sliding", "check_past_window")
    ragged_rows = _oracle("hf_genfix.oracles.padding", "ragged_rows")
    window = _window(ctx.model)
    if window is None:
        raise ProbeSkipped("the config has no sliding-window layers")
    if window > MAX_WINDOW:
        raise ProbeSkipped(f"sliding_window {window} is too long for a quick check: build the test model with a "
                           f"small one (e.g. sliding_window=8)")
    rows = ragged_rows((window + 4, 3), vocab_size=ctx.vocab_size)
    new = max(ctx.max_new_tokens, 2 * window)
    what = f"generation past a sliding window of {window} (prompts {[len(r) for r in rows]}, {new} new tokens)"
    with recording(ctx.model) as calls:
        try:
            return check_past_window(ctx.model, rows, new, what, pad_token_id=ctx.pad_token_id,
                                     **ctx.generate_kwargs)
        except DefectObserved as found:
            step = found.figures.get("step")
            raise DefectObserved(
                found.message + "." + _causes(diagnose(calls, max(len(r) for r in rows), True, failed_step=step)),
                **found.figures) from found
        except Exception as exc:  # noqa: BLE001 - generation crashing past the window is the finding
            raise crashed(what, exc, calls, max(len(r) for r in rows), True) from exc


def check_assisted(ctx: Context) -> dict[str, Any]:
    """Assisted decoding with 1- and 5-token drafts gives exactly plain greedy's tokens (and logits)."""
    check_same_as_greedy = _oracle("hf_genfix.oracles.sliding", "check_same_as_greedy")
    drafting = _oracle("hf_genfix.oracles.sliding", "drafting")
    ragged_rows = _oracle("hf_genfix.oracles.padding", "ragged_rows")
    import copy

    assistant = ctx.assistant_model
    window = _window(ctx.model)
    length = 2 * window if window and window <= MAX_WINDOW else max(len(r) for r in ctx.rows)
    (row,) = ragged_rows((length,), vocab_size=ctx.vocab_size)
    new = max(ctx.max_new_tokens, 2 * window if window and window <= MAX_WINDOW else 0)
    saved = copy.deepcopy(assistant.generation_config)
    worst = 0.0
    try:
        for tokens in (1, 5):
            what = (f"assisted decoding, drafts of {tokens} token{'s' if tokens > 1 else ''} "
                    f"({'the model drafting for itself' if assistant is ctx.model else type(assistant).__name__})")
            try:
                figures = check_same_as_greedy(ctx.model, row, new, what, **drafting(assistant, tokens))
            except DefectObserved:
                raise
            except Exception as exc:  # noqa: BLE001 - a crash of assisted decoding is the finding
                # (no step: the model's forward runs for the draft checks too, so calls do not count steps)
                found = crashed(what, exc, [], len(row), False)
                found.figures.pop("step")
                found.message = found.message.replace(" at generated step 0", "")
                found.args = (found.message,)
                raise found from exc
            worst = max(worst, figures.get("max_logit_diff", 0.0))
    finally:
        # drafting() tunes the assistant's generation config; the caller's model must not keep that.
        assistant.generation_config = saved
    return {"max_logit_diff": worst, "tokens": new}
