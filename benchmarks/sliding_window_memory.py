"""KV memory held by sliding-window layers far past the window, and decode time, with hf_genfix's patches as
installed vs all of them off, on the installed transformers release.

    python benchmarks/sliding_window_memory.py [--window 8] [--factor 16] [--runs 9]

For each tiny model of ``oracles.sliding.MODELS`` the release can build (Mistral, Qwen-2/3 with max_window_layers,
Gemma-2/3, Gemma-4 text with and without KV-shared layers, Cohere-2, gpt-oss), greedy ``generate()`` runs from a
``window``-token prompt to ``factor`` x ``window`` tokens with the cache generate builds (dynamic, then static).
A forward hook reads the cache after every step: the keys held by each sliding layer (the model's own layout,
``SlidingWindowPolicy.cached_layer_types``) must stay <= W - 1 + q, q being that step's number of new tokens.
Printed per model and cache: the most keys any sliding layer held after the prefill, the bound, the K+V bytes
of all layers and of the sliding layers at the end, and the median decode time; "patched" and "unpatched" are
measured alternately in one process. The headline is Gemma-4 with num_kv_shared_layers=0 on 5.5-5.13 (patch
sliding-window-kv-shared-zero).
Decode-time ratios are only meaningful where both runs are correct (the tests check that); each comes with its
bootstrap interval over the ``--runs`` interleaved pairs, and a row whose interval contains 1.0 says "no
measurable difference" (on 5.12.0 with 9 runs most rows do: there the patch does not touch the code path).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

from _paired import ratio as paired_ratio, report
from typing import Any

import hf_genfix
import torch
import transformers
from hf_genfix.oracles import ProbeSkipped
from hf_genfix.oracles.sliding import MODELS, sliding_model
from hf_genfix.oracles.sliding_static import kv_held


def measure(model: Any, window: int, factor: int, cache: str | None) -> dict:
    steps: list[tuple[int, int]] = []  # (q, most keys held by a sliding layer after that step)
    final: dict = {}

    def hook(module: Any, args: Any, kwargs: Any, output: Any) -> None:
        ids = kwargs.get("input_ids")
        q = ids.shape[1] if ids is not None else kwargs["inputs_embeds"].shape[1]
        held = kv_held(output.past_key_values, model.config)
        sliding = [tokens for kind, tokens, _ in held if kind == "sliding_attention"]
        steps.append((q, max(sliding, default=0)))
        final["bytes"] = sum(size for _, _, size in held)
        final["sliding_bytes"] = sum(size for kind, _, size in held if kind == "sliding_attention")
        final["layers"] = len(held)

    handle = model.register_forward_hook(hook, with_kwargs=True)
    prompt = torch.randint(3, 100, (1, window), generator=torch.Generator().manual_seed(0))
    try:
        start = time.perf_counter()
        with torch.no_grad():
            model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                           max_new_tokens=factor * window - window, eos_token_id=None, pad_token_id=0,
                           cache_implementation=cache)
        elapsed = time.perf_counter() - start
    finally:
        handle.remove()
    decode = steps[1:]  # the prefill returns the whole prompt's keys once, by design
    worst = max(decode, key=lambda s: s[1] - (window - 1 + s[0]))
    return dict(held=worst[1], bound=window - 1 + worst[0], ok=all(h <= window - 1 + q for q, h in decode),
                bytes=final.get("bytes", 0), sliding_bytes=final.get("sliding_bytes", 0),
                layers=final.get("layers", 0), ms_per_token=1e3 * elapsed / max(1, len(decode)))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--window", type=int, default=8)
    parser.add_argument("--factor", type=int, default=16)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    print(f"transformers {transformers.__version__}, window {args.window}, generated to {args.factor}x the window")
    print(f"{'model':30} {'cache':8} {'run':9} {'held':>5} {'bound':>5} {'ok':>3} {'KV bytes':>9} {'sliding':>9} "
          f"{'layers':>6} {'ms/token':>9}")
    failures = 0
    for label in MODELS:
        try:
            model = sliding_model(label, window=args.window)
        except (ProbeSkipped, ValueError, KeyError) as exc:
            print(f"{label:30} skipped: {exc}")
            continue
        for cache in (None, "static"):
            results: dict[str, list[dict]] = {"patched": [], "unpatched": []}
            try:
                for k in range(args.runs):
                    sides = (("patched", contextlib.nullcontext()), ("unpatched", hf_genfix.disabled()))
                    for run, ctx in (sides if k % 2 == 0 else sides[::-1]):
                        with ctx:
                            results[run].append(measure(model, args.window, args.factor, cache))
            except Exception as exc:  # noqa: BLE001 - a release that cannot run this cache: say so, go on
                print(f"{label:30} {cache or 'dynamic':8} error: {type(exc).__name__}: {str(exc)[:90]}")
                continue
            for run, rows in results.items():
                first = rows[0]
                failures += run == "patched" and not first["ok"]
                ms = statistics.median(r["ms_per_token"] for r in rows)
                print(f"{label:30} {cache or 'dynamic':8} {run:9} {first['held']:5d} {first['bound']:5d} "
                      f"{'yes' if first['ok'] else 'NO':>3} {first['bytes']:9d} {first['sliding_bytes']:9d} "
                      f"{first['layers']:6d} {ms:9.3f}")
            pairs = [p["ms_per_token"] / u["ms_per_token"]
                     for p, u in zip(results["patched"], results["unpatched"])]
            before, after = results["unpatched"][0], results["patched"][0]
            print(f"{'':30} {'':8} patched/unpatched: KV bytes {after['bytes'] / max(1, before['bytes']):.3f}x, "
                  f"sliding-layer KV bytes {after['sliding_bytes'] / max(1, before['sliding_bytes']):.3f}x")
            report("sliding_window_memory", f"{'':30} {'':8} decode time patched/unpatched ({label}, "
                   f"{cache or 'dynamic'})", paired_ratio(pairs), release=transformers.__version__, model=label,
                   cache=cache or "dynamic", held=after["held"], held_unpatched=before["held"], bound=after["bound"],
                   sliding_bytes_ratio=round(after["sliding_bytes"] / max(1, before["sliding_bytes"]), 3),
                   bytes_ratio=round(after["bytes"] / max(1, before["bytes"]), 3))
    installed = [s.id for s in hf_genfix.status() if s.state in ("applied", "forced")]
    print(f"patches installed (the 'patched' runs): {', '.join(installed) or 'none'}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
