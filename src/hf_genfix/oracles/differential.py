"""Never worse than upstream, as code: one scenario run without hf_genfix and with it, in one process.

A scenario is a function of one argument that runs a generation path and checks it against its oracle (returns
figures, raises ``DefectObserved`` when the output is wrong, ``ProbeSkipped`` when it cannot run here). While it
runs, ``recording`` keeps what the user's calls returned: every ``generate()`` of the model (sequences, scores,
logits, the length of the returned cache) and, for scenarios that call the model by hand, every forward's logits.

``differential`` runs the scenario inside ``registry.disabled()`` (upstream) and then as installed (hf_genfix) and
``compare`` judges the pair:

- ``identical``: upstream passes its oracle and hf_genfix's outputs are bitwise identical;
- ``corrected``: upstream is wrong or raises, hf_genfix passes the oracle; also where both pass but upstream is
  off by 10x more than hf_genfix and beyond float noise (a defect under the oracle's tolerance; the detail says so),
  and where the outputs are bitwise upstream's but for a returned cache's length, which hf_genfix's cache gives
  as the positions its layers hold and upstream's does not;
- ``same-exception``: both raise an exception of the same type, or both raise and hf_genfix's is a refusal in
  words (transformers' own, ``refuses``, or one of hf_genfix's ``...Unsupported`` errors), or hf_genfix's is raised
  in transformers' own code and upstream's there too or in a remote-code model's own module (hf_genfix took the
  call past upstream's failure to another of upstream's);
- ``unchanged``: upstream is wrong and hf_genfix returns the same (bitwise) wrong output: a defect it does not
  correct, not one it adds; also, in a scenario of several stages (a first turn, then a second from its cache),
  where upstream is wrong at an earlier stage that hf_genfix gets right, and a later stage is wrong both ways
  (upstream run again past its wrong stage, ``past_earlier_stages``): hf_genfix corrects part of it and adds
  nothing;
- ``refused``: upstream is silently wrong, hf_genfix raises instead;
- ``skipped``: the scenario cannot run on this release (``ProbeSkipped`` on both sides);
- ``unsupported`` (the sweep's, not ``compare``'s): the model cannot do what the scenario asks (padding it cannot
  take), so its oracle means nothing; still ``worse`` where upstream passes and hf_genfix does not give the same,
  or hf_genfix raises where upstream returned;
- ``rounding`` (the sweep's): both pass, the outputs differ by float rounding (under ``ROUNDING_LIMIT``), and
  they are bitwise upstream's with one patch off whose fix module says why it cannot be bitwise (``NOT_BITWISE``:
  a memory bound that shortens the attention's reduction, say); the reason is given per scenario;
- ``worse``: anything else -- an exception or a wrong answer where upstream passed, different outputs where
  upstream was right, a wrong answer where upstream raised, another exception type raised outside transformers
  (hf_genfix's own code) where upstream raised, another wrong answer where upstream was wrong.

The sweep (``hf-genfix doctor --sweep``, ``--differential``) and ``tests/test_differential.py`` both judge with
``compare``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..verdicts import Word
from .outcome import (CRASHED_PARTS, EARLIER, PASSED_PARTS, WRONG_PARTS, DefectObserved, ProbeSkipped, current_part,
                      parts, past_earlier_stages)

PASS, WRONG, RAISED, SKIPPED = Word.PASS, Word.WRONG, Word.RAISED, Word.SKIPPED

IDENTICAL, CORRECTED, SAME_EXCEPTION = Word.IDENTICAL, Word.CORRECTED, Word.SAME_EXCEPTION
UNCHANGED, REFUSED, NOT_RUN, WORSE = Word.UNCHANGED, Word.REFUSED, Word.SKIPPED, Word.WORSE
UNSUPPORTED = Word.UNSUPPORTED  # given by the caller (the sweep) where the model cannot do what the scenario asks
# Given by the sweep: both pass, the outputs differ by float rounding only, and turning off one patch whose fix
# module documents why it cannot be bitwise (its ``NOT_BITWISE``) makes them bitwise upstream's.
ROUNDING = Word.ROUNDING
VERDICTS = (IDENTICAL, CORRECTED, SAME_EXCEPTION, UNCHANGED, REFUSED, UNSUPPORTED, ROUNDING, NOT_RUN, WORSE)


@dataclass
class Observation:
    """One run of a scenario: its outcome against the oracle and what the user's calls returned."""

    outcome: str  # pass | wrong | raised | skipped
    message: str = ""
    error: str | None = None  # the exception type where upstream code raised (also behind a DefectObserved)
    figures: dict[str, Any] = field(default_factory=dict)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    where: str = ""  # file:line of the exception, for a crash
    caught: bool = False  # the oracle caught the exception and reported it as the defect (DefectObserved)
    # patch id -> calls it changed during the run (``hf_genfix.recording()``; only fix modules that report count):
    # which patch turned upstream's answer into this one (``doctor --sweep --recall``).
    changed: dict[str, int] = field(default_factory=dict)
    # The patches whose switch the run read (``_patcher.watching``): an empty set says no hf_genfix code ran.
    reached: frozenset = frozenset({"*"})  # unknown (not watched): as if hf_genfix code ran


def observe(scenario: Callable[[Any], Any], subject: Any, models: tuple[Any, ...] = (),
            record_forward: bool = False) -> Observation:
    """Run ``scenario(subject)`` once, recording the outputs of ``models`` (see ``recording``)."""
    import traceback

    from .. import _patcher, _record

    start = time.perf_counter()
    outputs: list[dict[str, Any]] = []
    record = _record.Recording()
    reached: set = {"*"}  # until watched: as if hf_genfix code ran
    try:
        with warnings.catch_warnings(), contextlib.ExitStack() as stack:
            warnings.simplefilter("ignore")
            reached = stack.enter_context(_patcher.watching())
            record = stack.enter_context(_record.recording())
            for model in models:
                # generate() keeps a static cache on the model (``_cache``) and reuses it in the next call: one left
                # half-built by a run that raised made the other run raise otherwise (5.0.0 xglm, ctrl, trocr). Each
                # run starts as a fresh call would.
                vars(model).pop("_cache", None)
                # From 5.15 generate() sizes each new static cache to the longest any earlier call on this model asked
                # for (``_previous_max_cache_length``): hf_genfix's run raised it, so upstream's run got a longer cache,
                # whose extra masked keys move the logits by float rounding (5.16.0's whole sweep: 164 static-cache
                # pairs "worse" by 3e-08 to 1.4e-06 at step 0; on 5.15.1 and 5.25.0 they read as rounding).
                vars(model).pop("_previous_max_cache_length", None)
                _fresh_module_states(model)
                stack.enter_context(recording(model, outputs, forward=record_forward))
            figures = scenario(subject)
    except DefectObserved as exc:
        cause = exc.__cause__
        if cause is not None and not isinstance(cause, DefectObserved):
            # The oracle re-raised an upstream exception: for the comparison it is that exception.
            obs = Observation(RAISED, exc.message, type(cause).__name__, _plain(exc.figures), where=_where(cause),
                              caught=True)
        else:
            obs = Observation(WRONG, exc.message, None, _plain(exc.figures))
    except ProbeSkipped as exc:
        obs = Observation(SKIPPED, str(exc))
    except Exception as exc:  # noqa: BLE001 - what upstream (or hf_genfix) raised is the finding
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        obs = Observation(RAISED, f"{type(exc).__name__}: {_first_line(exc)}", type(exc).__name__,
                          where=f"{frame.filename}:{frame.lineno}")
    else:
        obs = Observation(PASS, "", None, _plain(figures if isinstance(figures, dict) else {}))
    obs.outputs = outputs
    obs.changed = {pid: n for pid, (_, n) in record.counts.items() if n}
    obs.reached = frozenset(reached)
    obs.seconds = round(time.perf_counter() - start, 3)
    return obs


# Generation state a model keeps in its own modules (RecurrentGemma up to 5.23): the recurrent blocks' RG-LRU state
# and convolution window (None when fresh), the attention blocks' keys and values (absent when fresh). Its forward
# reads the recurrent state even without a cache, so a state left by the previous run with another number of rows
# made the next run raise or not depending on which side ran last (4.46.3, same-call-twice: a shape error with
# hf_genfix only, because its beam search had let the previous scenario run on).
_MODULE_STATES = {"recurrent_states": None, "conv1d_state": None}
_MODULE_CACHES = ("key_states", "value_states")


def _fresh_module_states(model: Any) -> None:
    """Each run starts from the model's modules as a fresh model has them."""
    modules = getattr(model, "modules", None)
    if modules is None:
        return
    for module in modules():
        own = vars(module)
        for name, fresh in _MODULE_STATES.items():
            if own.get(name) is not None:
                own[name] = fresh
        for name in _MODULE_CACHES:
            if name in own and type(module).__name__.startswith("RecurrentGemma"):
                del own[name]


def differential(registry: Any, scenario: Callable[[Any], Any], subject: Any, models: tuple[Any, ...] = (),
                 record_forward: bool = False, ours: Observation | None = None) -> dict[str, Any]:
    """Run ``scenario`` without hf_genfix (``registry.disabled()``) and with it (or take ``ours``, a run already
    made with the patches as installed) and judge the pair: {"verdict", "detail", "upstream", "ours",
    "same_code"}.

    ``same_code``: every read of a patch's switch in ``ours`` was taken back by a wrapper that left its call as
    upstream makes it (``record.unchanged()``), or there was none (``Observation.reached`` is empty); ``disabled()``
    changes nothing but what those switches return, so inside it the same code would run on the same inputs, and
    upstream's observation is ``ours`` itself."""
    same_code = ours is not None and not ours.reached
    if same_code:
        upstream = dataclasses.replace(ours, outputs=list(ours.outputs), figures=dict(ours.figures))
    else:
        with registry.disabled():
            upstream = observe(scenario, subject, models, record_forward)
    if ours is None:
        ours = observe(scenario, subject, models, record_forward)
    verdict, detail = compare(upstream, ours)
    if verdict == WORSE and upstream.outcome == WRONG and ours.outcome == WRONG \
            and upstream.figures.get("stage") == EARLIER and ours.figures.get("stage") != EARLIER:
        # Upstream stops at its wrong earlier stage; hf_genfix gets that stage right and is wrong at a later one,
        # so their outputs differ by construction. Upstream run on past its wrong stage says whether the later
        # stage is wrong without hf_genfix too (a defect hf_genfix leaves, not one it adds).
        with registry.disabled(), past_earlier_stages():
            later = observe(scenario, subject, models, record_forward)
        if later.outcome == WRONG:
            verdict, detail = UNCHANGED, (f"hf_genfix corrects upstream's wrong earlier stage ({upstream.message}); "
                                          f"a later stage is wrong both ways: {ours.message}; upstream, run past "
                                          f"its wrong stage: {later.message}")
    return {"verdict": verdict, "detail": detail, "upstream": upstream, "ours": ours, "same_code": same_code}


def _corrects_the_oracle(obs: Observation) -> bool:
    """Whether every patch that changed a call of this run declares that the sweep's no-cache oracle shares its
    defect (``[evidence] oracle``: the forward itself is wrong, and the probe judges against a definition)."""
    from ..catalog import manifest

    if not obs.changed:
        return False
    try:
        return all("oracle" in manifest(pid).evidence for pid in obs.changed)
    except Exception:  # noqa: BLE001 - an id the catalog does not know (a test's loose manifest): no claim
        return False


def compare(upstream: Observation, ours: Observation) -> tuple[str, str]:
    """(verdict, detail) for one scenario: see the module docstring."""
    u, o = upstream, ours
    if u.outcome == SKIPPED and o.outcome == SKIPPED:
        return NOT_RUN, u.message
    if u.outcome == PASS:
        if o.outcome != PASS:
            return WORSE, f"upstream passes; with hf_genfix {_describe(o)}"
        diff = difference(u.outputs, o.outputs)
        if diff and _closer(o, u):
            # Upstream's output is off by less than the oracle's tolerance but by 10x more than hf_genfix's (a
            # defect the tolerance hides: 4.57's chunked prefill at unpadded positions, seen through Cohere's
            # logit_scale of 1/16): upstream is not right there, so no bitwise equality is owed.
            return CORRECTED, (f"upstream is off by {u.figures['max_logit_diff']:.3g} against the oracle (under its "
                               f"tolerance), hf_genfix by {o.figures['max_logit_diff']:.3g}: {diff}")
        if diff and _corrects_the_oracle(o):
            # The patches that changed this run correct the model's own no-cache forward (their manifests' evidence
            # names the probe's oracle, the definition): the sweep's oracle shares the defect, so upstream's pass
            # is no proof of right, and the difference is theirs (5.3-5.5 Qwen-VL's M-RoPE positions).
            return CORRECTED, (f"the outputs differ where {', '.join(sorted(o.changed))} corrects the model's own "
                               f"forward, which the no-cache oracle shares: {diff}")
        if diff and _length_told_right(u.outputs, o.outputs):
            # The outputs are bitwise upstream's; only the returned cache's length differs, and hf_genfix's is the
            # positions the cache holds where upstream's is not: a defect of the cache's report, which a next turn
            # sliced by that length would meet.
            return CORRECTED, f"the returned cache now says the positions it holds ({diff})"
        extra = _runs_what_upstream_raises_on(u, o)
        if diff and extra:
            # A scenario of several calls that lists the loud ones and goes on (cache-implementations): a call
            # upstream raises on runs right with hf_genfix, and every call upstream answered is bitwise the same
            # (4.49's Gemma-2: cache_implementation="sliding_window" crashes there, sliding-window-hybrid-cache
            # serves it).
            return CORRECTED, f"hf_genfix answers right where upstream raises ({extra}); the rest bitwise upstream's"
        if diff:
            return WORSE, f"both pass the oracle, but the outputs are not bitwise identical: {diff}"
        return IDENTICAL, f"{len(o.outputs)} output(s) bitwise identical"
    if o.outcome == PASS:
        return CORRECTED, f"upstream {_describe(u)}; hf_genfix passes the oracle"
    if u.outcome == WRONG:
        if o.outcome == WRONG:
            diff = difference(u.outputs, o.outputs)
            if not diff:
                return UNCHANGED, f"the same wrong output as upstream ({u.message})"
            first = o.figures.get("row")
            rows = rows_that_differ(u.outputs, o.outputs)
            if isinstance(first, int) and rows and max(rows) < first:
                # The oracle checks row by row: hf_genfix's first wrong row is ``first``, so every row it changed
                # (all before it) passes, and from ``first`` on its output is upstream's, NaN for NaN (4.53.0's
                # Gemma-3n: row 1 of an unpadded batch is NaN both ways; hf_genfix corrects row 0).
                return UNCHANGED, (f"hf_genfix corrects row(s) {sorted(rows)} ({u.message}); from row {first} on "
                                   f"its output is upstream's, wrong both ways: {o.message}")
            split = corrected_parts(u, o)
            if split is not None:
                # A scenario of several runs, judged run by run: every run whose output hf_genfix changed passes
                # the oracle, and every run still wrong is bitwise upstream's (4.48.0's Cohere-2 in
                # left-padded-cache-implementations: "hybrid" corrected, "sliding_window" wrong both ways).
                changed, left = split
                return UNCHANGED, (f"hf_genfix corrects the run(s) {', '.join(changed)}; the run(s) {', '.join(left)} "
                                   f"are wrong both ways, bitwise upstream's: {o.message}")
            return WORSE, f"upstream {_describe(u)}; hf_genfix gives another wrong output: {o.message} ({diff})"
        if o.outcome == RAISED:
            return REFUSED, f"upstream is silently wrong ({u.message}); hf_genfix raises {o.message}"
        return WORSE, f"upstream {_describe(u)}; with hf_genfix {_describe(o)}"
    # upstream raised (or could not run)
    if o.outcome == RAISED and o.error == _error(u):
        return SAME_EXCEPTION, f"both raise {o.error}"
    if o.outcome == RAISED and u.outcome == RAISED and (refuses(o.message) or str(o.error).endswith("Unsupported")):
        # Loud both ways, and hf_genfix's failure is a refusal in words: transformers' own (5.2's MiniMax: a crash
        # on eos_token_id=None upstream; with prompt-lookup's fix past it, "MiniMaxCache does not support crop"), or
        # one of hf_genfix's ``...Unsupported`` errors where upstream crashed on the same call (5.4's Mamba).
        return SAME_EXCEPTION, f"both raise: upstream {u.error}; with hf_genfix a refusal in words: {o.message}"
    if o.outcome == RAISED and u.outcome == RAISED and _in_transformers(o.where) \
            and (_in_transformers(u.where) or _in_remote_code(u.where)):
        # Loud both ways, each exception raised in transformers' own code: hf_genfix took the call past the point
        # where upstream fails to another of upstream's failures, and added no answer (5.2.0's GLM-MoE-DSA prompt
        # lookup: upstream's TypeError on eos_token_id=None, which decoding-prompt-lookup-no-eos corrects, then the
        # model's own RuntimeError on several tokens after a cache, which it raises without hf_genfix too). The same
        # where upstream fails in a remote-code model's own module (4.51.0's MiniCPM: its import of LogitsWarper,
        # which a remote-code patch gives back, then 4.51.0's own NameError without accelerate).
        return SAME_EXCEPTION, (f"both raise inside transformers or the model's code: upstream {u.error}, with "
                                f"hf_genfix {o.error} at {o.where}")
    if o.outcome == WRONG:
        return WORSE, f"upstream raises {_error(u)}; hf_genfix returns a wrong answer instead: {o.message}"
    return WORSE, f"upstream {_describe(u)}; with hf_genfix {_describe(o)}"


def corrected_parts(upstream: Observation, ours: Observation) -> tuple[list[str], list[str]] | None:
    """For two wrong observations of a scenario of named parts (``outcome.scenario_part``): (the parts whose
    outputs differ, the parts wrong with hf_genfix) where every part that differs passes with hf_genfix and every
    part wrong with hf_genfix is wrong upstream too, its outputs bitwise upstream's; else None. A part that
    crashed with hf_genfix, or a call recorded outside any part, leaves the scenario judged whole."""
    if parts(ours.figures, CRASHED_PARTS):
        return None
    wrong = parts(ours.figures, WRONG_PARTS)
    if not wrong or not wrong <= parts(upstream.figures, WRONG_PARTS):
        return None
    groups = []
    for obs in (upstream, ours):
        by_part: dict[str, list[dict[str, Any]]] = {}
        for record in obs.outputs:
            if "part" not in record:
                return None
            by_part.setdefault(record["part"], []).append(record)
        groups.append(by_part)
    changed = sorted(p for p in set(groups[0]) | set(groups[1])
                     if difference(groups[0].get(p, []), groups[1].get(p, [])))
    if not changed or not set(changed) <= parts(ours.figures, PASSED_PARTS):
        return None
    return changed, sorted(wrong)


def loud_alike(upstream: BaseException, ours: BaseException) -> bool:
    """Whether two exceptions of one call are the same loud failure for ``compare``: one type, or each raised inside
    transformers' own code (hf_genfix took the call past upstream's failure to another of upstream's)."""
    return type(upstream) is type(ours) or (_in_transformers(_where(upstream)) and _in_transformers(_where(ours)))


def _in_transformers(where: str) -> bool:
    """Whether an exception's innermost frame (``file:line``) is transformers' code, not hf_genfix's or a test's."""
    path = where.replace("\\", "/")
    return "/transformers/" in path and "hf_genfix" not in path


def _in_remote_code(where: str) -> bool:
    """Whether an exception's innermost frame is a remote-code model's own module (transformers loads them as the
    ``transformers_modules`` package)."""
    return "/transformers_modules/" in where.replace("\\", "/")


# Words of transformers' own refusals (``ValueError: ... is not supported``): the sweep's ``unsupported``.
# "is unsupported": 4.48's generate() on a model whose generation config names a cache ("Passing both
# `cache_implementation` ... and `past_key_values` ... is unsupported"), Gemma-2's second turn.
REFUSAL_WORDS = ("not support", "isn't supported", "is not supported", "is unsupported", "not compatible",
                 "not implemented", "doesn't support", "does not have", "not available", "only supported", "requires",
                 "cannot use")


def refuses(message: str) -> bool:
    """Whether an exception's message is transformers refusing the call in words."""
    return any(word in message.lower() for word in REFUSAL_WORDS)


NOISE = 1e-7  # float32 rounding in a tiny model's logits: a difference under it tells nothing
ROUNDING_LIMIT = 1e-5  # the most a documented not-bitwise patch may move a tiny model's logits


def oracle_distances(ours: Observation, upstream: Observation) -> tuple[float, float] | None:
    """(hf_genfix's, upstream's) max |logit| difference against the oracle, where both runs measured it."""
    o, u = ours.figures.get("max_logit_diff"), upstream.figures.get("max_logit_diff")
    if not isinstance(o, (int, float)) or not isinstance(u, (int, float)):
        return None
    return o, u


def answered_where_upstream_raised(upstream: Observation, ours: Observation) -> list[str]:
    """The sub-calls of a scenario that lists the loud ones and goes on (its ``caches`` figure: the implementations
    that ran) that ran with hf_genfix only, where upstream's run listed them as raising; [] otherwise."""
    ran = [set(filter(None, str(run.figures.get("caches", "")).split(", "))) for run in (upstream, ours)]
    extra = sorted(ran[1] - ran[0])
    if not extra or not ran[0] <= ran[1]:
        return []
    listed = str(upstream.figures.get("unsupported", ""))
    return extra if all(name in listed for name in extra) else []


def _runs_what_upstream_raises_on(upstream: Observation, ours: Observation) -> str:
    """The sub-calls (a scenario's ``caches`` figure: the implementations that ran) that ran with hf_genfix only,
    where upstream's run listed them as raising, and only when every output upstream recorded is bitwise one of
    ours, in order; "" otherwise."""
    extra = answered_where_upstream_raised(upstream, ours)
    if not extra:
        return ""
    mine = iter(ours.outputs)
    if not all(any(not difference([theirs], [candidate]) for candidate in mine) for theirs in upstream.outputs):
        return ""
    return ", ".join(extra)


def _closer(ours: Observation, upstream: Observation) -> bool:
    """Whether both runs measured their distance to the oracle and hf_genfix's is 10x smaller than upstream's
    (beyond float noise): upstream passes by the tolerance only."""
    distances = oracle_distances(ours, upstream)
    return distances is not None and distances[1] > 10 * max(distances[0], NOISE)


def _error(obs: Observation) -> str | None:
    return "ProbeSkipped" if obs.outcome == SKIPPED else obs.error


def _describe(obs: Observation) -> str:
    if obs.outcome == PASS:
        return "passes the oracle"
    if obs.outcome == WRONG:
        return f"is wrong: {obs.message}"
    if obs.outcome == SKIPPED:
        return f"cannot run: {obs.message}"
    return f"raises {obs.message}"


# -- recording the user's calls ---------------------------------------------------------------------------------
@contextlib.contextmanager
def recording(model: Any, into: list[dict[str, Any]], forward: bool = False) -> Iterator[list[dict[str, Any]]]:
    """Append to ``into`` what each ``model.generate()`` (and, with ``forward``, each forward) returns.

    The hooks are instance attributes that look the method up on the class at every call, so that whatever
    hf_genfix has installed at that moment (``disabled()`` swaps class attributes) is what runs; they keep the
    method's signature (transformers inspects ``self.forward``). Removed on exit.
    """
    names = ["generate"] + (["forward"] if forward else [])
    added = []
    for name in names:
        if name in vars(model):  # already recorded (an assistant that is the model itself)
            continue
        bound = getattr(model, name)

        def hook(*args: Any, _name: str = name, **kwargs: Any) -> Any:
            out = getattr(type(model), _name).__get__(model)(*args, **kwargs)
            record = digest(out, _name)
            part = current_part()
            if part is not None:  # a scenario of several runs: which one this call belongs to (outcome.scenario_part)
                record["part"] = part
            into.append(record)
            return out

        functools.update_wrapper(hook, bound)
        model.__dict__[name] = hook  # past nn.Module.__setattr__: a plain instance attribute
        added.append(name)
    try:
        yield into
    finally:
        for name in added:
            model.__dict__.pop(name, None)


def digest(out: Any, call: str) -> dict[str, Any]:
    """The parts of a generate() / forward output that the invariant compares, detached from the graph."""
    import torch

    if torch.is_tensor(out):
        return {"call": call, "sequences": out.detach().clone()}
    record: dict[str, Any] = {"call": call}
    for key in ("sequences", "scores", "logits"):
        value = getattr(out, key, None)
        if value is None:
            continue
        record[key] = value.detach().clone() if torch.is_tensor(value) else tuple(v.detach().clone() for v in value)
    cache = getattr(out, "past_key_values", None)
    if cache is not None:
        record["cache_length"] = cache_length(cache)
        record["cache_held"] = held_length(cache)
    return record


def held_length(cache: Any) -> int | None:
    """The most positions any layer of a returned cache holds (each layer's own ``get_seq_length``): what the cache's
    length should say. None where the cache has no layers that can tell."""
    held = None
    for layer in getattr(cache, "layers", None) or ():
        try:
            n = int(layer.get_seq_length())
        except Exception:  # noqa: BLE001 - a layer that cannot say (5.24's linear-attention layers)
            continue
        held = n if held is None else max(held, n)
    return held


def _length_told_right(upstream: list[dict[str, Any]], ours: list[dict[str, Any]]) -> bool:
    """Whether the recordings differ only in the returned caches' lengths, each such one where hf_genfix's cache
    says the positions its layers hold and upstream's does not (5.25's RecurrentGemma: a cache of 14 positions that
    says 0, which a second turn is then sliced by)."""
    if len(upstream) != len(ours):
        return False
    told = False
    for u, o in zip(upstream, ours):
        if u.get("cache_length") != o.get("cache_length"):
            if o.get("cache_length") != o.get("cache_held") or u.get("cache_length") == u.get("cache_held"):
                return False
            told = True
    strip = [{k: v for k, v in r.items() if k != "cache_length"} for r in upstream]
    return told and not difference(strip, [{k: v for k, v in r.items() if k != "cache_length"} for r in ours])


def cache_length(cache: Any) -> int | None:
    """How many tokens a returned cache holds (a Cache's ``get_seq_length``, a legacy tuple's key length)."""
    try:
        return int(cache.get_seq_length())
    except Exception:  # noqa: BLE001 - legacy tuples, recurrent states
        try:
            return int(cache[0][0].shape[-2])
        except Exception:  # noqa: BLE001
            return None


def difference(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> str:
    """Where two recordings differ ("" when bitwise identical): call, field, shape or first differing value."""
    import torch

    if len(a) != len(b):
        return f"{len(a)} recorded call(s) without hf_genfix, {len(b)} with it"
    for i, (x, y) in enumerate(zip(a, b)):
        for key in sorted(set(x) | set(y)):
            u, v = x.get(key), y.get(key)
            where = f"call {i} ({x.get('call')}), {key}"
            if isinstance(u, tuple) or isinstance(v, tuple):
                if not isinstance(u, tuple) or not isinstance(v, tuple) or len(u) != len(v):
                    return f"{where}: {len(u or ())} vs {len(v or ())} steps"
                for t, (p, q) in enumerate(zip(u, v)):
                    text = _tensor_difference(p, q)
                    if text:
                        return f"{where}, step {t}: {text}"
            elif torch.is_tensor(u) or torch.is_tensor(v):
                text = _tensor_difference(u, v)
                if text:
                    return f"{where}: {text}"
            elif u != v:
                return f"{where}: {u!r} vs {v!r}"
    return ""


def rows_that_differ(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> set[int] | None:
    """The batch rows in which two recordings differ (NaN equal to NaN), or None where a difference is not one of
    rows: the number of calls, a value that is not a tensor, a shape or dtype, tensors of another batch size."""
    import torch

    if len(a) != len(b):
        return None
    rows: set[int] = set()
    batch: int | None = None
    for x, y in zip(a, b):
        if set(x) != set(y):
            return None
        for key in x:
            u, v = x[key], y[key]
            pairs = list(zip(u, v)) if isinstance(u, tuple) and isinstance(v, tuple) and len(u) == len(v) else [(u, v)]
            if isinstance(u, tuple) != isinstance(v, tuple) or (isinstance(u, tuple) and len(u) != len(v)):
                return None
            for p, q in pairs:
                if not (torch.is_tensor(p) and torch.is_tensor(q)):
                    if p != q:
                        return None
                    continue
                if p.shape != q.shape or p.dtype != q.dtype:
                    return None
                same = _same_values(p, q)
                if bool(same.all()):
                    continue
                if p.dim() == 0 or (batch is not None and p.shape[0] != batch):
                    return None
                batch = p.shape[0]
                rows |= {int(i) for i in torch.nonzero(~same.reshape(p.shape[0], -1).all(dim=1)).flatten()}
    return rows


def largest_difference(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> float:
    """The largest |difference| between two recordings' float tensors; inf where anything else differs (a token,
    a shape, a cache length, the number of calls)."""
    import torch

    if len(a) != len(b):
        return float("inf")
    largest = 0.0
    for x, y in zip(a, b):
        if set(x) != set(y):
            return float("inf")
        for key in x:
            u, v = x[key], y[key]
            pairs = list(zip(u, v)) if isinstance(u, tuple) and isinstance(v, tuple) and len(u) == len(v) else [(u, v)]
            for p, q in pairs:
                if not (torch.is_tensor(p) and torch.is_tensor(q)):
                    if p != q:
                        return float("inf")
                elif p.shape != q.shape or p.dtype != q.dtype or (not p.is_floating_point() and not torch.equal(p, q)):
                    return float("inf")
                elif p.is_floating_point() and p.numel():
                    largest = max(largest, float((p.float() - q.float()).abs().max()))
    return largest


def _same_values(p: Any, q: Any) -> Any:
    """Elementwise equality of two tensors of one shape, NaN equal to NaN (a NaN the model gives both ways is the
    same output)."""
    import torch

    same = p == q
    return same | (torch.isnan(p) & torch.isnan(q)) if p.is_floating_point() else same


def _tensor_difference(p: Any, q: Any) -> str:
    import torch

    if not (torch.is_tensor(p) and torch.is_tensor(q)):
        return f"{type(p).__name__} vs {type(q).__name__}"
    if p.shape != q.shape or p.dtype != q.dtype:
        return f"shape/dtype {tuple(p.shape)} {p.dtype} vs {tuple(q.shape)} {q.dtype}"
    if torch.equal(p, q):
        return ""
    if p.is_floating_point():
        same = _same_values(p, q)
        if bool(same.all()):
            return ""  # NaN where the other has NaN: the same output (torch.equal calls NaN unequal to itself)
        return f"max |difference| {float((p.float() - q.float()).abs()[~same].max()):.3g}"
    return f"{int((p != q).sum())} of {p.numel()} values differ"


# -- counting -------------------------------------------------------------------------------------------------
def tally(verdicts: list[str]) -> dict[str, int]:
    return {v: verdicts.count(v) for v in VERDICTS}


def summary_line(counts: dict[str, int]) -> str:
    """'N scenarios: X identical, Y corrected, Z same-exception, W worse' (+ the rarer verdicts when present)."""
    ran = sum(n for v, n in counts.items() if v != NOT_RUN)
    parts = [f"{counts.get(v, 0)} {v}" for v in (IDENTICAL, CORRECTED, SAME_EXCEPTION)]
    parts += [f"{counts[v]} {v}" for v in (UNCHANGED, REFUSED) if counts.get(v)]
    parts += [f"{counts[UNSUPPORTED]} unsupported by the model"] if counts.get(UNSUPPORTED) else []
    parts += [f"{counts[ROUNDING]} rounding (a documented patch)"] if counts.get(ROUNDING) else []
    parts.append(f"{counts.get(WORSE, 0)} worse")
    skipped = f" ({counts[NOT_RUN]} more cannot run here)" if counts.get(NOT_RUN) else ""
    return f"{ran} scenarios: {', '.join(parts)}{skipped}"


def _first_line(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:limit] if text else ""


def _where(exc: BaseException) -> str:
    import traceback

    tb = traceback.extract_tb(exc.__traceback__)
    return f"{tb[-1].filename}:{tb[-1].lineno}" if tb else ""


def _plain(figures: dict[str, Any]) -> dict[str, Any]:
    return {k: (float(v) if isinstance(v, float) else v) for k, v in figures.items()
            if isinstance(v, (int, float, str, bool)) or v is None}
