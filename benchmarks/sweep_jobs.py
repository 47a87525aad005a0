"""What ``hf-genfix doctor --sweep --jobs N`` buys: the sweep's wall time with N worker processes vs one process,
median ratio of paired runs with its spread.

    python benchmarks/sweep_jobs.py [--pairs 3] [--jobs 2] [--archs 12]

Each side is ``run_sweep(..., differential_all=True)`` (what ``doctor --sweep --differential`` runs after the
probes) over the same sample of the release's decoder-only, encoder-decoder and image-text architectures (every
``len(types) // archs``-th, so each kind is in it), the two back to back in alternating order. Wall time, not CPU
time: the workers' startup (each imports torch and transformers) is part of what ``--jobs`` costs. The reports
must be the same apart from their times (checked on the first pair). A ratio near 1/N needs N idle cores: on a
machine doing other work it says what a user there would get.
"""

from __future__ import annotations

import argparse
import os
import time

from _paired import one_hash_seed, ratio, report

os.environ.setdefault("OMP_NUM_THREADS", "1")


def main() -> None:
    one_hash_seed()  # this process and its workers: the two reports compare whole
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--archs", type=int, default=12, help="architectures in the sample")
    args = parser.parse_args()

    import torch
    import transformers

    import hf_genfix  # noqa: F401 - the patches, as in doctor
    from hf_genfix.oracles import sweep
    from hf_genfix.oracles.sweep.jobs import differences

    torch.set_num_threads(1)  # as each worker of a 2-job sweep on 2 cores: the two sides round alike
    types = list(sweep.kinds_of(None))
    sample = types[:: max(1, len(types) // args.archs)][: args.archs]
    print(f"transformers {transformers.__version__}: {len(sample)} of {len(types)} architectures: "
          f"{', '.join(sample)}", flush=True)

    def side(jobs: int) -> tuple[float, dict]:
        start = time.perf_counter()
        out = sweep.run_sweep(archs=sample, differential_all=True, jobs=jobs)
        return time.perf_counter() - start, out

    ratios, one, many = [], [], []
    for i in range(args.pairs):
        order = (1, args.jobs) if i % 2 == 0 else (args.jobs, 1)
        got = {jobs: side(jobs) for jobs in order}
        one.append(got[1][0])
        many.append(got[args.jobs][0])
        ratios.append(got[args.jobs][0] / got[1][0])
        differ = differences(got[1][1], got[args.jobs][1]) if i == 0 else []
        if differ:
            raise SystemExit("the two sides' reports differ (--jobs must not change the sweep's answer):\n  "
                             + "\n  ".join(differ[:20]))
        print(f"pair {i + 1}: 1 process {got[1][0]:.1f} s, {args.jobs} jobs {got[args.jobs][0]:.1f} s", flush=True)
    report("sweep_jobs", f"sweep --differential over {len(sample)} architectures, --jobs {args.jobs} vs one process "
                         f"(wall; {os.cpu_count()} cores)", ratio(ratios),
           one_process_s=sorted(one)[len(one) // 2], jobs_s=sorted(many)[len(many) // 2], jobs=args.jobs,
           architectures=len(sample))


if __name__ == "__main__":
    main()
