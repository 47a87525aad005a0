"""What the prepare-inputs patches cost: ``generate()`` with them vs without (median ratio of paired runs), and
the wrapper's cost per ``prepare_inputs_for_generation`` call.

    python benchmarks/prepare_inputs.py [--pairs 15] [--batch 4] [--new 256] [--calls 20000]

Tiny Llama (oracles.tiny), left-padded batch, greedy, exactly ``--new`` tokens per row. Each pair runs both
sides back to back in alternating order, the patches switched between runs, never inside the timed region; both
sides must generate the same tokens. Times are the process's CPU time (``time.process_time``), so that other
programs on a shared machine do not count; torch runs on one thread (OMP_NUM_THREADS=1); the garbage collector
is run before and paused during each timed run, as timeit does. Then one call as ``generate()`` makes it (the path every decode step
takes) is timed wrapped and unwrapped, best of 7 repeats of ``--calls`` calls; the call a hand-written loop
makes (completed into generate's call) is timed too, for information. Targets: ratio <= 1.01x, <= 10 us/call.
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import time

from _paired import ratio as paired_ratio, report
from _timing import add_device_options, cpu_timed, use_device

PATCHES = ("prepare-inputs", "prepare-inputs-logits-to-keep", "legacy-cache")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=15)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--new", type=int, default=256)
    parser.add_argument("--calls", type=int, default=20000)
    add_device_options(parser)
    args = parser.parse_args()
    use_device(args)

    import torch
    import transformers

    import hf_genfix
    from hf_genfix.doctor import import_targets
    from hf_genfix.helpers.decode import cache_from_outputs
    from hf_genfix.oracles import left_pad, tiny_model

    import_targets()
    model = tiny_model("llama", max_position_embeddings=512)
    rows = [[(7 * i + 3 * j) % 120 + 3 for j in range(8 + 3 * i)] for i in range(args.batch)]
    ids, mask = left_pad(rows)
    kwargs = dict(attention_mask=mask, do_sample=False, max_new_tokens=args.new, min_new_tokens=args.new,
                  pad_token_id=0)

    def timed_generate(context) -> tuple[float, torch.Tensor]:
        # Switching patches allocates (wrappers for every class); collect before, not inside, the timed region.
        with context, torch.no_grad():
            return cpu_timed(lambda: model.generate(ids, **kwargs))

    for _ in range(2):  # warm-up: kernels, allocator, lazy imports
        timed_generate(hf_genfix.forced(*PATCHES)), timed_generate(hf_genfix.disabled(*PATCHES))
    ratios, with_times, without_times = [], [], []
    for i in range(args.pairs):
        sides = [("with", hf_genfix.forced(*PATCHES)), ("without", hf_genfix.disabled(*PATCHES))]
        results = dict((name, timed_generate(ctx)) for name, ctx in (sides if i % 2 == 0 else sides[::-1]))
        if not torch.equal(results["with"][1], results["without"][1]):
            raise SystemExit("generate() produced other tokens with the patches than without")
        ratios.append(results["with"][0] / results["without"][0])
        with_times.append(results["with"][0])
        without_times.append(results["without"][0])
    summary = paired_ratio(ratios)

    # One decode step's call, as generate() makes it on this release, and as a hand-written loop makes it.
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, use_cache=True)
    cache = cache_from_outputs(out)
    full = torch.cat([ids, out.logits[:, -1:].argmax(-1)], -1)
    grown = torch.cat([mask, torch.ones_like(mask[:, :1])], -1)
    params = inspect.signature(model.prepare_inputs_for_generation).parameters
    cache_key = "cache" if "cache" in params else "past_key_values"
    generate_call = {cache_key: cache, "attention_mask": grown, "use_cache": True}
    if "next_sequence_length" in params:
        generate_call["next_sequence_length"] = 1
        generate_call["position_ids"] = (grown.cumsum(-1) - 1).clamp(min=0)
    else:
        generate_call["cache_position"] = torch.tensor([ids.shape[1]], device=ids.device)
    loop_call = {"past_key_values": cache, "attention_mask": grown}

    def per_call(context, call) -> float:
        with context:
            method = model.prepare_inputs_for_generation
            for _ in range(200):
                method(full, **call)
            best = float("inf")
            for _ in range(7):
                start = time.process_time()
                for _ in range(args.calls):
                    method(full, **call)
                best = min(best, (time.process_time() - start) / args.calls)
            return best

    wrapped = per_call(hf_genfix.forced(*PATCHES), generate_call)
    plain = per_call(hf_genfix.disabled(*PATCHES), generate_call)
    loop = per_call(hf_genfix.forced(*PATCHES), loop_call)
    overhead_us = (wrapped - plain) * 1e6

    print(f"transformers {transformers.__version__}; tiny llama, batch {args.batch}, {args.new} new tokens, "
          f"greedy, {args.pairs} pairs")
    print(f"generate with the patches     median {statistics.median(with_times) * 1e3:8.2f} ms")
    print(f"generate without              median {statistics.median(without_times) * 1e3:8.2f} ms")
    report("prepare_inputs", "generate() with / without the prepare-inputs patches", summary, target=1.01,
           release=transformers.__version__, wrapper_us=round(overhead_us, 2))
    print(f"prepare_inputs_for_generation, generate's call: unwrapped {plain * 1e6:7.2f} us, wrapped "
          f"{wrapped * 1e6:7.2f} us, wrapper cost {overhead_us:+.2f} us/call  (target <= 10 us)")
    print(f"prepare_inputs_for_generation, a loop's call completed by the patch: {loop * 1e6:7.2f} us "
          f"(for information: that call fails or is wrong without the patch)")
    return 0 if summary.low <= 1.01 and overhead_us <= 10 else 1


if __name__ == "__main__":
    raise SystemExit(main())
