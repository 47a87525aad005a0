"""Paired, interleaved timings -> a ratio with its spread, said in words.

Every benchmark here times two sides back to back, alternating which goes first, and keeps the ratio of each
pair. A ratio alone says nothing about noise: on a shared 2-core machine two identical runs differ by several
percent. So each ratio is printed with the interquartile range of the pairs and a bootstrap 95% interval of
their median, and the number of pairs; when that interval contains 1.0 the line says "no measurable
difference" instead of a bare ratio.

``GENFIX_BENCH_JSON=FILE`` makes every ``report()`` also append one JSON line to FILE, which
``benchmarks/run_all.py`` collects into the README's performance table.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
from dataclasses import asdict, dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class Ratio:
    median: float
    q1: float
    q3: float
    low: float   # bootstrap 95% interval of the median
    high: float
    pairs: int

    @property
    def measurable(self) -> bool:
        return not (self.low <= 1.0 <= self.high)

    def words(self, target: float | None = None) -> str:
        spread = (f"95% CI {self.low:.3f}-{self.high:.3f}, IQR {self.q1:.3f}-{self.q3:.3f}, "
                  f"{self.pairs} pairs")
        if not self.measurable:
            verdict = "no measurable difference"
        else:
            verdict = f"{'slower' if self.median > 1 else 'faster'} by {abs(self.median - 1) * 100:.1f}%"
        if target is not None:
            verdict += f"; target <= {target:.2f}x: {'ok' if self.low <= target else 'ABOVE TARGET'}"
        return f"{self.median:.3f}x ({spread}): {verdict}"


def ratio(values: Sequence[float], resamples: int = 2000, seed: int = 0) -> Ratio:
    """Median of paired ratios, its quartiles, and a percentile-bootstrap 95% interval of the median."""
    values = list(values)
    if not values:
        raise ValueError("no pairs")
    q = statistics.quantiles(values, n=4) if len(values) >= 2 else [values[0]] * 3
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    low, high = medians[int(0.025 * resamples)], medians[min(resamples - 1, int(0.975 * resamples))]
    return Ratio(statistics.median(values), q[0], q[2], low, high, len(values))


def report(benchmark: str, what: str, value: Ratio | str, target: float | None = None, **figures: Any) -> str:
    """Print one result line and, under ``GENFIX_BENCH_JSON``, record it for run_all.py."""
    text = value.words(target) if isinstance(value, Ratio) else value
    print(f"{what}: {text}", flush=True)
    path = os.environ.get("GENFIX_BENCH_JSON")
    if path:
        row = {"benchmark": benchmark, "what": what, "text": text, **figures}
        if isinstance(value, Ratio):
            row["ratio"] = asdict(value)
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")
    return text


def one_hash_seed() -> None:
    """Re-execute this benchmark with ``PYTHONHASHSEED=0`` (once): upstream messages print sets in hash order
    (QuantizedCache: "invalid layer types: {'sliding_attention', ...}"), which differs from process to process, so
    two sweep reports (and a sweep's worker processes) compare whole only under one seed."""
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, *sys.argv])
