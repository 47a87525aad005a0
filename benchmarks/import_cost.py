"""What `import hf_genfix` costs a program: median over fresh processes, side by side with `python -c pass`.

    python benchmarks/import_cost.py [--runs 30]

Runs are interleaved (pass, import, pass, import, ...) so that machine noise hits both alike. Also checks that
the import pulls in neither torch nor transformers.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

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
    for _ in range(args.runs):
        base.append(timed("pass"))
        imp.append(timed(IMPORT))
    b, i = statistics.median(base), statistics.median(imp)
    print(f"python -c pass        median {b * 1e3:7.2f} ms over {args.runs} fresh processes")
    print(f"import hf_genfix      median {i * 1e3:7.2f} ms")
    print(f"added by hf_genfix    {(i - b) * 1e3:7.2f} ms   ratio {i / b:.3f}x   (budget: 5 ms)")
    print("torch / transformers imported: no")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
