"""What `import hf_genfix` costs a program: median over fresh processes, side by side with `python -c pass`.

    python benchmarks/import_cost.py [--runs 30]

Runs are paired and interleaved (which side goes first alternates) so that machine noise hits both
alike; the ratio is printed with its spread (benchmarks/_paired.py). Also checks that
the import pulls in neither torch nor transformers.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from _paired import ratio, report

IMPORT = (
    "import sys, hf_genfix\n"
    "bad = [m for m in ('torch', 'transformers') if m in sys.modules]\n"
    "assert not bad, f'import hf_genfix imported {bad}'\n"
)


def timed(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    timed(IMPORT)  # warm the file cache
    base, imp = [], []
    for k in range(args.runs):
        # alternate which side goes first, so that a slow moment hits both alike
        if k % 2:
            imp.append(timed(IMPORT))
            base.append(timed("pass"))
        else:
            base.append(timed("pass"))
            imp.append(timed(IMPORT))
    b, i = statistics.median(base), statistics.median(imp)
    added = statistics.median(x - y for x, y in zip(imp, base))
    print(f"python -c pass        median {b * 1e3:7.2f} ms over {args.runs} fresh processes")
    print(f"import hf_genfix      median {i * 1e3:7.2f} ms")
    report("import_cost", "import hf_genfix vs python -c pass", ratio([x / y for x, y in zip(imp, base)]),
           added_ms=round(added * 1e3, 2))
    print(f"added by hf_genfix    {added * 1e3:7.2f} ms (median of paired differences; budget: 5 ms)")
    print("torch / transformers imported: no")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
