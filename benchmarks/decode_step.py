"""What hf_genfix costs one decode step of ``generate()``: with vs without, three ways, for three kinds of model.

    python benchmarks/decode_step.py [--pairs 48] [--processes 8] [--new 24] [--depth-effect] [--control]

Models (tiny, float32, one thread, batch 4 left-padded, greedy, exactly ``--new`` tokens per row):
- ``llama``: a built-in decoder-only model (``hf_genfix.oracles.tiny_model``);
- ``remote``: a trust_remote_code repo that subclasses the release's own Llama, loaded as users load one (the
  remote-code layer must cost nothing when the code it guards against is not there);
- ``t5``: an encoder-decoder model.

Per step means: the CPU time of the calling thread (``time.thread_time_ns``: other programs on a shared machine do
not count) between two consecutive calls of a stopping criterion that ``generate()`` calls once per step, median
over the steps after the first (the prefill is left out). Three measurements:

1. **calls per step** (deterministic, immune to machine load): the Python and C calls one decode step makes, with
   and without hf_genfix, counted with ``sys.setprofile`` over the steps of a second generate() minus those of a
   shorter one; the functions that differ are named. This says *which* wrapper costs what, on any machine.
   With it, the wrappers' own work: ``prepare_inputs_for_generation`` with a decode step's own arguments,
   replayed with and without hf_genfix (``wrapper_work``): microseconds a ratio of whole steps cannot resolve.
2. **in process**: pairs of generate() calls alternating ``hf_genfix.revert()`` / ``hf_genfix.activate()``
   (switched outside the timed region); the ratio of median per-step times, with its interval (``_paired.py``).
   Each pair calls generate() from another call depth (``at_depth``: on CPython 3.11 where the frames fall in
   the frame stack moves a 4.5x step by -13% to +19%, more than any wrapper costs; ``--depth-effect`` shows it).
3. **separate processes** (``--processes`` pairs, alternating ``HF_GENFIX=off`` and default): each process
   reports its per-step time, the mean over call depths; the ratio of each pair. Import-time effects (memory
   layout, what was imported) show here and not in (2).

Both sides must generate the same tokens. Goal: no measurable difference (interval contains 1.0, or <= 1.01x).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")

from _paired import ratio, report  # noqa: E402

MODELS = ("llama", "remote", "t5")


def build(kind: str, tmp: Path) -> tuple[Any, dict[str, Any]]:
    """(model, generate kwargs) for one kind of model."""
    from hf_genfix.oracles import left_pad, tiny_model

    rows = [[(7 * i + 3 * j) % 120 + 3 for j in range(8 + 3 * i)] for i in range(4)]
    ids, mask = left_pad(rows)
    if kind == "llama":
        return tiny_model("llama", max_position_embeddings=512), dict(input_ids=ids, attention_mask=mask)
    if kind == "remote":
        from remote_code import _current_repo

        from hf_genfix.oracles.legacy import load_remote_model

        folder = tmp / "current"
        folder.mkdir(exist_ok=True)
        return load_remote_model(_current_repo(folder)), dict(input_ids=ids, attention_mask=mask)
    if kind == "t5":
        from hf_genfix.oracles.decode import tiny_seq2seq

        return tiny_seq2seq("t5"), dict(input_ids=ids, attention_mask=mask)
    raise ValueError(kind)


class StepClock:
    """A stopping criterion that only notes when it is called: once per decode step."""

    def __init__(self, clock: Callable[[], int] = time.thread_time_ns):
        self.clock, self.stamps = clock, []

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        self.stamps.append(self.clock())
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

    def per_step_us(self) -> float:
        steps = [(b - a) / 1e3 for a, b in zip(self.stamps[1:], self.stamps[2:])]
        return statistics.median(steps)


def generate(model: Any, inputs: dict[str, Any], new: int, clock: StepClock | None = None) -> Any:
    import torch
    from transformers import StoppingCriteriaList

    criteria = StoppingCriteriaList([clock]) if clock is not None else None
    with torch.no_grad():
        return model.generate(**inputs, do_sample=False, max_new_tokens=new, min_new_tokens=new, pad_token_id=0,
                              stopping_criteria=criteria)


def at_depth(depth: int, func: Callable[..., Any], *args: Any) -> Any:
    """``func(*args)``, called ``depth`` Python frames deeper than here.

    Why the benchmark moves its call site: on CPython 3.11 how fast deeply nested code runs depends on where its
    frames fall in the interpreter's frame stack (allocated in 16 KiB chunks; a hot call that keeps crossing a
    chunk boundary allocates and frees one each time). Measured without hf_genfix on 4.57.6, whose decode step
    spends two thirds of its time in nested vmap calls (the mask), calling generate() from 0 to 16 frames deeper
    changed the mask's time by -13% to +19%. Every wrapper adds a frame or two, so a benchmark with one fixed call
    site measures that offset, not the wrapper's work: a user's own call site moves it as much. The pairs rotate
    through call depths (``DEPTHS``), the same depth for both sides of a pair.
    """
    if depth <= 0:
        return func(*args)
    return at_depth(depth - 1, func, *args)


# Call depths the pairs rotate through: spread over more than one 16 KiB chunk of frames.
DEPTHS = tuple((53 * i) % 192 for i in range(48))


def per_step(model: Any, inputs: dict[str, Any], new: int, depth: int = 0) -> tuple[float, Any]:
    """(median microseconds per decode step, tokens), the garbage collector paused as timeit does, generate()
    called ``depth`` frames deeper (``at_depth``)."""
    import gc

    clock = StepClock()
    gc.collect()
    gc.disable()
    try:
        out = at_depth(depth, generate, model, inputs, new, clock)
    finally:
        gc.enable()
    return clock.per_step_us(), out


def _short(filename: str) -> str:
    """A code object's file as a path inside its package: the same on every machine."""
    for anchor in ("site-packages/", "/src/"):
        if anchor in filename:
            return filename.rsplit(anchor, 1)[-1]
    return filename


def calls_per_step(model: Any, inputs: dict[str, Any], new: int) -> collections.Counter:
    """Calls (Python functions and C functions) made by ``new`` extra decode steps: generate(2n) - generate(n)."""
    counts = []
    for steps in (new, 2 * new):
        seen: collections.Counter = collections.Counter()

        def profile(frame: Any, event: str, arg: Any) -> None:
            if event == "call":
                code = frame.f_code
                seen[(_short(code.co_filename), code.co_name)] += 1
            elif event == "c_call":
                seen[("<C>", getattr(arg, "__qualname__", repr(arg)))] += 1

        sys.setprofile(profile)
        try:
            generate(model, inputs, steps)
        finally:
            sys.setprofile(None)
        counts.append(seen)
    extra = counts[1]
    extra.subtract(counts[0])
    return collections.Counter({k: v / new for k, v in extra.items() if v})


def wrapper_work(model: Any, inputs: dict[str, Any], hf_genfix: Any, calls: int = 1000,
                 rounds: int = 16) -> tuple[float, float, float] | None:
    """What the wrappers on ``prepare_inputs_for_generation`` add to one call, measured alone: the call
    generate() makes at its third step (its own arguments, captured) replayed ``calls`` times as generate()
    makes it (``model.prepare_inputs_for_generation(...)``), with and without hf_genfix (``revert()``), in
    alternating rounds, each round from another call depth (``at_depth``: 4.5x builds its mask in there);
    (median difference, with, without) in microseconds. The per-step ratio cannot resolve a
    few microseconds in a step of 1-4 ms; this can. None where the call cannot be captured."""
    captured: list[tuple[tuple, dict]] = []
    method = type(model).prepare_inputs_for_generation

    def spy(*args: Any, **kwargs: Any) -> Any:
        captured.append((args, dict(kwargs)))
        return method.__get__(model, type(model))(*args, **kwargs)

    vars(model)["prepare_inputs_for_generation"] = spy  # generate() looks the method up on the model
    try:
        generate(model, inputs, 4)
    finally:
        del vars(model)["prepare_inputs_for_generation"]
    if len(captured) < 3:
        return None
    args, kwargs = captured[2]

    def loop() -> float:
        start = time.thread_time_ns()
        for _ in range(calls):
            model.prepare_inputs_for_generation(*args, **kwargs)
        return (time.thread_time_ns() - start) / calls / 1e3

    import torch

    with_us, without_us = [], []
    with torch.no_grad():
        for i in range(rounds):
            for on in ((True, False) if i % 2 == 0 else (False, True)):
                (hf_genfix.activate if on else hf_genfix.revert)()
                (with_us if on else without_us).append(at_depth(DEPTHS[(3 * i) % len(DEPTHS)], loop))
    hf_genfix.activate()
    diffs = [a - b for a, b in zip(with_us, without_us)]
    return statistics.median(diffs), statistics.median(with_us), statistics.median(without_us)


def in_process(args: Any) -> int:
    import torch
    import transformers

    import hf_genfix
    from hf_genfix.doctor import import_targets

    torch.set_num_threads(1)
    import_targets()
    code = 0
    release = transformers.__version__
    print(f"transformers {release}, torch {torch.__version__}; batch 4 left-padded, {args.new} new tokens, greedy")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.models:
            model, inputs = build(kind, Path(tmp))
            # (1) what one step calls, with and without: deterministic.
            generate(model, inputs, 4)
            with_calls = calls_per_step(model, inputs, args.new // 2)
            hf_genfix.revert()
            without_calls = calls_per_step(model, inputs, args.new // 2)
            hf_genfix.activate()
            more = {k: with_calls[k] - without_calls.get(k, 0) for k in set(with_calls) | set(without_calls)
                    if with_calls.get(k, 0) != without_calls.get(k, 0)}
            added = sum(more.values())
            names = ", ".join(f"{n}:{f} {v:+g}" for (n, f), v in sorted(more.items(), key=lambda kv: -abs(kv[1])))
            report("decode_step", f"{kind}: calls per decode step with / without hf_genfix",
                   f"{sum(with_calls.values()):.0f} / {sum(without_calls.values()):.0f} ({added:+g})"
                   + (f": {names}" if names else ": the same calls"), release=release, model=kind,
                   calls_added=added)
            # (1b) the wrapper's own work: one prepare_inputs_for_generation call of a decode step, replayed.
            added = wrapper_work(model, inputs, hf_genfix)
            if added is not None:
                report("decode_step", f"{kind}: prepare_inputs_for_generation of a decode step, replayed, with - "
                       "without hf_genfix", f"{added[0]:+.2f} us per call ({added[1]:.2f} vs {added[2]:.2f} us)",
                       release=release, model=kind, wrapper_us=added[0])
            # (2) per-step time, pairs alternating revert()/activate() outside the timed region.
            for _ in range(2):
                per_step(model, inputs, args.new)
            ratios, times = [], {True: [], False: []}
            for i in range(args.pairs):
                got = {}
                for on in ((True, False) if i % 2 == 0 else (False, True)):
                    (hf_genfix.activate if on else hf_genfix.revert)()
                    got[on] = per_step(model, inputs, args.new, DEPTHS[i % len(DEPTHS)])
                    times[on].append(got[on][0])
                hf_genfix.activate()
                if not torch.equal(got[True][1], got[False][1]):
                    print(f"{kind}: other tokens with hf_genfix than without")
                    code = 1
                ratios.append(got[True][0] / got[False][0])
            summary = ratio(ratios)
            if args.depth_effect:
                # Without hf_genfix: the per-step time at each call depth (``at_depth``), relative to the median
                # over the depths; each depth's time is the median of 3 runs.
                hf_genfix.revert()
                at = {d: statistics.median(per_step(model, inputs, args.new, d)[0] for _ in range(3))
                      for d in sorted(DEPTHS)}
                hf_genfix.activate()
                middle = statistics.median(at.values())
                report("decode_step", f"{kind}: call depth, without hf_genfix, per-step time / median over depths",
                       f"{min(at.values()) / middle:.3f}x - {max(at.values()) / middle:.3f}x over depths "
                       + ", ".join(f"{d}: {t / middle:.3f}" for d, t in at.items()), release=release, model=kind)
            if args.control:
                # The noise floor: the same pairs with hf_genfix off on both sides.
                hf_genfix.revert()
                control = [per_step(model, inputs, args.new, DEPTHS[i % len(DEPTHS)])[0]
                           / per_step(model, inputs, args.new, DEPTHS[i % len(DEPTHS)])[0]
                           for i in range(args.pairs)]
                hf_genfix.activate()
                report("decode_step", f"{kind}: control, per decode step without / without hf_genfix",
                       ratio(control), release=release, model=kind)
            report("decode_step", f"{kind}: per decode step, in process "
                   f"({statistics.median(times[True]):.0f} vs {statistics.median(times[False]):.0f} us)",
                   summary, target=1.01, release=release, model=kind,
                   with_us=statistics.median(times[True]), without_us=statistics.median(times[False]))
    return code


def child(args: Any) -> int:
    """One process's median per-step time for each model, as JSON on stdout."""
    import torch

    if os.environ.get("HF_GENFIX") != "off":
        import hf_genfix  # noqa: F401 - the import is what is measured
    torch.set_num_threads(1)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.models:
            model, inputs = build(kind, Path(tmp))
            for _ in range(2):
                per_step(model, inputs, args.new)
            # The mean over call depths (``at_depth``): one fixed call site measures where the frames fall.
            out[kind] = statistics.fmean(per_step(model, inputs, args.new, depth)[0] for depth in DEPTHS[::2])
    print(json.dumps(out))
    return 0


def separate_processes(args: Any) -> int:
    import transformers

    cmd = [sys.executable, __file__, "--child", "--new", str(args.new), "--models", *args.models]
    ratios: dict[str, list[float]] = {k: [] for k in args.models}
    times: dict[str, dict[bool, list[float]]] = {k: {True: [], False: []} for k in args.models}
    for i in range(args.processes):
        got = {}
        for on in ((True, False) if i % 2 == 0 else (False, True)):
            env = dict(os.environ)
            env.pop("GENFIX_BENCH_JSON", None)
            env["HF_GENFIX"] = "on" if on else "off"
            got[on] = json.loads(subprocess.check_output(cmd, env=env, text=True).strip().splitlines()[-1])
        for kind in args.models:
            ratios[kind].append(got[True][kind] / got[False][kind])
            times[kind][True].append(got[True][kind])
            times[kind][False].append(got[False][kind])
    for kind in args.models:
        on, off = statistics.median(times[kind][True]), statistics.median(times[kind][False])
        report("decode_step", f"{kind}: per decode step, separate processes ({on:.0f} vs {off:.0f} us)",
               ratio(ratios[kind]), target=1.01, release=transformers.__version__, model=kind, with_us=on,
               without_us=off)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=48)
    parser.add_argument("--processes", type=int, default=8, help="pairs of separate processes (0: skip)")
    parser.add_argument("--new", type=int, default=24)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--control", action="store_true",
                        help="also time pairs without hf_genfix on both sides: the machine's noise floor")
    parser.add_argument("--depth-effect", action="store_true",
                        help="also time, without hf_genfix, generate() called from each depth of DEPTHS")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if args.child:
        return child(args)
    code = in_process(args)
    if args.processes:
        with contextlib.suppress(KeyboardInterrupt):
            code |= separate_processes(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
