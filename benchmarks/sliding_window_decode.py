"""What the wrapped ``DynamicSlidingWindowLayer.update`` costs at decode time, where upstream is correct too.

    python benchmarks/sliding_window_decode.py [--pairs 40] [--new 64] [--hidden 32]

The patch sliding-window-draft-keys (5.15-5.17) wraps ``DynamicSlidingWindowLayer.update`` in place; every
decoding step of every sliding layer goes through the wrapper. Measured where upstream's result is correct, so
that the comparison is like for like:

- greedy: plain greedy decoding far past the window (the layer does not record its past: the wrapper only
  checks a flag);
- assisted-1: assisted decoding with 1-token drafts (the layer records its past; a crop follows every forward,
  so upstream returns the right keys and the wrapper only compares two lengths).

(Multi-token drafts are what the patch corrects: upstream crashes there, there is nothing to compare.)

Each pair runs both sides back to back in alternating order, the patch switched between runs (hf_genfix.
disabled), never inside the timed region; both sides must give the same tokens. Times are this process's CPU
time (``time.process_time``; torch runs one thread here), which the other jobs on a shared machine disturb less
than wall time; on a loaded machine the best-of-N ratio and the wrapper-cost bound are the steadier figures. Printed: the median ratio
patched / upstream per scenario (target <= 1.02), and the wrapper's own cost per ``update`` call timed alone.
On a release outside 5.15-5.17 the patch is forced on when the release has what it wraps (past recording,
5.15+), else there is nothing to measure.
"""

from __future__ import annotations

import argparse
import statistics
import time

from _paired import ratio as paired_ratio, report
from _timing import add_device_options, use_device

PATCH = "sliding-window-draft-keys"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--new", type=int, default=64, help="new tokens per run")
    parser.add_argument("--hidden", type=int, default=32, help="hidden size of the tiny Mistral (window 8)")
    add_device_options(parser)
    args = parser.parse_args()
    use_device(args)

    import contextlib

    import torch
    import transformers

    import hf_genfix
    from hf_genfix.doctor import import_targets

    transformers.logging.set_verbosity_error()
    from hf_genfix.oracles.sliding import WINDOW, drafting, prompts, sliding_model

    import_targets()
    state = {s.id: s.state for s in hf_genfix.status()}[PATCH]
    on = contextlib.nullcontext
    if state not in ("applied", "forced"):
        on = lambda: hf_genfix.forced(PATCH)  # noqa: E731
        with on():
            state = {s.id: s.state for s in hf_genfix.status()}[PATCH]
        if state != "forced":
            print(f"transformers {transformers.__version__}: {PATCH} cannot be installed here ({state}): the "
                  "layer has no past recording, nothing to measure")
            return 0
        state = "forced (outside its range)"

    size = dict(hidden_size=args.hidden, intermediate_size=2 * args.hidden, head_dim=8,
                num_attention_heads=args.hidden // 8, num_key_value_heads=max(1, args.hidden // 16))
    model = sliding_model("mistral", **size)
    drafter = sliding_model("mistral", seed=1, **size)
    ids = torch.tensor(prompts(2 * WINDOW))
    common = dict(max_new_tokens=args.new, min_new_tokens=args.new, do_sample=False, pad_token_id=0,
                  eos_token_id=None)
    scenarios = {"greedy": {}, "assisted-1": drafting(drafter, 1)}

    def run(kwargs: dict, patched: bool) -> tuple[float, torch.Tensor]:
        with (on() if patched else hf_genfix.disabled(PATCH)):
            start = time.process_time()
            with torch.no_grad():
                out = model.generate(ids, **common, **kwargs)
            return time.process_time() - start, out

    # The wrapper's own cost, timed alone on one layer: update() through the wrapper vs upstream's method.
    from transformers.cache_utils import DynamicSlidingWindowLayer

    key = torch.zeros(1, 2, 1, 8)
    costs = {}
    for label, patched in (("patched", True), ("upstream", False)):
        with (on() if patched else hf_genfix.disabled(PATCH)):
            layer = DynamicSlidingWindowLayer(sliding_window=WINDOW)
            for _ in range(2 * WINDOW):
                layer.update(key, key)
            start = time.process_time()
            for _ in range(5000):
                layer.update(key, key)
            costs[label] = (time.process_time() - start) / 5000
    extra = costs["patched"] - costs["upstream"]

    print(f"transformers {transformers.__version__}, {PATCH} {state}; tiny mistral (hidden {args.hidden}, "
          f"2 sliding layers, window {WINDOW}), prompt {2 * WINDOW} + {args.new} new tokens, {args.pairs} pairs")
    print(f"  update() alone: patched {costs['patched'] * 1e6:.2f} us, upstream {costs['upstream'] * 1e6:.2f} us "
          f"per call ({extra * 1e6:+.2f} us for the wrapper)")
    for name, kwargs in scenarios.items():
        for _ in range(3):  # warm-up: kernels, allocator, lazy imports
            run(kwargs, True), run(kwargs, False)
        with torch.no_grad():  # the patch left as it is: switching it inside the count would undo the counter
            calls = _update_calls(lambda: model.generate(ids, **common, **kwargs))
        ratios, patched_times, upstream_times = [], [], []
        for i in range(args.pairs):
            if i % 2:
                (tu, out_u), (tp, out_p) = run(kwargs, False), run(kwargs, True)
            else:
                (tp, out_p), (tu, out_u) = run(kwargs, True), run(kwargs, False)
            if not torch.equal(out_p, out_u):
                raise SystemExit(f"{name}: the patched layer generated other tokens than upstream's")
            ratios.append(tp / tu)
            patched_times.append(tp)
            upstream_times.append(tu)
        upstream = statistics.median(upstream_times)
        best = min(patched_times) / min(upstream_times)
        print(f"  {name:11s} patched {statistics.median(patched_times) * 1e3:7.1f} ms  upstream {upstream * 1e3:7.1f} ms"
              f"  best-of-{args.pairs} ratio {best:.4f}")
        report("sliding_window_decode", f"  {name}: patched / upstream decode", paired_ratio(ratios), target=1.02,
               release=transformers.__version__, scenario=name)
        # Noise-free bound: the wrapper's extra time per call x the update() calls of one run, over the run.
        print(f"  {'':11s} {calls} update() calls per run: wrapper cost bound {1 + calls * extra / upstream:.4f}")
    return 0


def _update_calls(run) -> int:
    """How many times one run calls DynamicSlidingWindowLayer.update (counted outside the timed runs)."""
    from unittest import mock

    from transformers.cache_utils import DynamicSlidingWindowLayer

    current = DynamicSlidingWindowLayer.__dict__["update"]
    counter = mock.Mock(side_effect=lambda self, *a, **k: current.__get__(self)(*a, **k))

    def counting(self, *args, **kwargs):
        return counter(self, *args, **kwargs)

    with mock.patch.object(DynamicSlidingWindowLayer, "update", counting):
        run()
    return counter.call_count



if __name__ == "__main__":
    raise SystemExit(main())
