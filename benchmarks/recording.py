"""What the per-call record costs: ``generate()`` unpatched, patched with recording off (the default) and patched
with recording on (``hf_genfix.recording()``), side by side, as median ratios of runs made back to back.

    python benchmarks/recording.py [--runs 15] [--batch 4] [--new 128]

Tiny Llama (oracles.tiny), left-padded batch, greedy, exactly ``--new`` tokens per row: every patch that wraps
generate() or prepare_inputs_for_generation sees each call (right-padding once per generate, prepare-inputs once
per step) and, the batch being left-padded, all three sides must generate the same tokens. Each round runs the
three sides in a rotating order; the patches are switched between runs, never inside the timed region. Times are
the process's CPU time, torch on one thread (OMP_NUM_THREADS=1), the garbage collector paused during each run.
Target: recording off <= 1.01x unpatched. Then one right-padded batch is generated while recording, to show the
lines a user sees.
"""

from __future__ import annotations

import argparse
import os
import statistics

from _paired import ratio as paired_ratio, report
from _timing import cpu_timed

os.environ.setdefault("OMP_NUM_THREADS", "1")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--new", type=int, default=128)
    args = parser.parse_args()

    import contextlib

    import torch
    import transformers

    import hf_genfix
    from hf_genfix.doctor import import_targets
    from hf_genfix.oracles import left_pad, right_pad, tiny_model

    torch.set_num_threads(1)
    import_targets()
    installed = [s.id for s in hf_genfix.status() if s.state in ("applied", "forced")]
    model = tiny_model("llama", max_position_embeddings=512)
    rows = [[(7 * i + 3 * j) % 120 + 3 for j in range(8 + 3 * i)] for i in range(args.batch)]
    ids, mask = left_pad(rows)
    kwargs = dict(attention_mask=mask, do_sample=False, max_new_tokens=args.new, min_new_tokens=args.new,
                  pad_token_id=0)
    sides = {
        "unpatched": lambda: hf_genfix.disabled(),
        "recording off": contextlib.nullcontext,
        "recording on": hf_genfix.recording,
    }

    def timed(side: str) -> tuple[float, torch.Tensor]:
        with sides[side](), torch.no_grad():
            return cpu_timed(lambda: model.generate(ids, **kwargs))

    names = list(sides)
    for name in names:  # warm-up: kernels, allocator, lazy imports
        timed(name)
    times: dict[str, list[float]] = {name: [] for name in names}
    ratios: dict[str, list[float]] = {"recording off": [], "recording on": []}
    for i in range(args.runs):
        order = names[i % 3:] + names[: i % 3]
        results = {name: timed(name) for name in order}
        reference = results["unpatched"][1]
        for name in names:
            if not torch.equal(results[name][1], reference):
                raise SystemExit(f"generate() produced other tokens ({name}) than unpatched")
            times[name].append(results[name][0])
        for name in ratios:
            ratios[name].append(results[name][0] / results["unpatched"][0])

    with hf_genfix.recording() as rec:
        right_ids, right_mask = right_pad(rows)
        with torch.no_grad():
            model.generate(right_ids, attention_mask=right_mask, do_sample=False, max_new_tokens=2, pad_token_id=0)

    print(f"transformers {transformers.__version__}; tiny llama, batch {args.batch}, {args.new} new tokens, greedy, "
          f"{args.runs} rounds; patches installed: {', '.join(installed) or 'none'}")
    print(f"{'side':<16}{'median ms':>12}{'ratio vs unpatched (median of rounds)':>40}")
    for name in names:
        ratio = f"{statistics.median(ratios[name]):.4f}x" if name in ratios else "1x"
        print(f"{name:<16}{statistics.median(times[name]) * 1e3:>12.2f}{ratio:>40}")
    off = paired_ratio(ratios["recording off"])
    report("recording", "recording off / unpatched", off, target=1.01, release=transformers.__version__, side="off")
    report("recording", "recording on / unpatched", paired_ratio(ratios["recording on"]),
           release=transformers.__version__, side="on")
    print("recorded for one right-padded batch (2 new tokens):")
    for line in rec.lines:
        print(f"  {line}")
    print(f"  counts (seen, changed): {rec.counts}")
    return 0 if off.low <= 1.01 else 1


if __name__ == "__main__":
    raise SystemExit(main())
