"""What the differential's same-code shortcut buys: a ``doctor --sweep --differential`` over a sample of
architectures where upstream's run is skipped when no patch changed a call of hf_genfix's run, against the same sweep
that runs upstream every time; median ratio of paired runs with its spread.

    python benchmarks/sweep_same_code.py [--pairs 3] [--archs 12]

The shortcut (``oracles.differential.differential``: ``Observation.reached`` empty, every read of a patch's
switch taken back by a wrapper's ``record.unchanged()``) takes hf_genfix's observation as upstream's, since
``disabled()`` changes nothing but what those switches return. The other side is the same
sweep with every observation marked as having reached a patch. Both sides run in this one process, back to back
in alternating order, one thread each; their reports must be the same apart from times and the shortcut's own
count (checked on every pair): the shortcut must not change the sweep's answer; what upstream itself does not
repeat is listed apart as noise (``_noise_apart``).
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
    parser.add_argument("--archs", type=int, default=12, help="architectures in the sample")
    args = parser.parse_args()

    import torch
    import transformers

    import hf_genfix  # noqa: F401 - the patches, as in doctor
    from hf_genfix.oracles import differential, sweep
    from hf_genfix.oracles.sweep.jobs import differences

    torch.set_num_threads(1)
    types = list(sweep.kinds_of(None))
    sample = types[:: max(1, len(types) // args.archs)][: args.archs]
    print(f"transformers {transformers.__version__}: {len(sample)} of {len(types)} architectures: "
          f"{', '.join(sample)}", flush=True)
    shortcut = differential.differential

    def always_rerun(registry, scenario, subject, models=(), record_forward=False, ours=None):
        if ours is not None:
            ours.reached = frozenset({"*"})
        return shortcut(registry, scenario, subject, models, record_forward, ours)

    def side(rerun: bool) -> tuple[float, dict]:
        differential.differential = always_rerun if rerun else shortcut
        try:
            start = time.perf_counter()
            out = sweep.run_sweep(archs=sample, differential_all=True)
            return time.perf_counter() - start, out
        finally:
            differential.differential = shortcut

    ratios, plain, short, saved = [], [], [], 0
    for i in range(args.pairs):
        order = (True, False) if i % 2 == 0 else (False, True)
        got = {rerun: side(rerun) for rerun in order}
        plain.append(got[True][0])
        short.append(got[False][0])
        ratios.append(got[False][0] / got[True][0])
        saved = got[False][1]["differential"]["same_code"]
        for out in (got[True][1], got[False][1]):
            out["differential"].pop("same_code", None)
        differ, noise = _noise_apart(differences(got[True][1], got[False][1]))
        if noise:
            print(f"pair {i + 1}: {len(noise)} difference(s) of run-to-run noise, not the shortcut's:\n  "
                  + "\n  ".join(noise[:12]), flush=True)
        if differ:
            raise SystemExit("the two sides' reports differ (the shortcut must not change the sweep's answer):\n  "
                             + "\n  ".join(differ[:20]))
        print(f"pair {i + 1}: upstream run every time {got[True][0]:.1f} s, shortcut {got[False][0]:.1f} s "
              f"({saved} upstream runs skipped)", flush=True)
    report("sweep_same_code", f"sweep --differential over {len(sample)} architectures, upstream's run skipped where "
                              f"no patch changed a call of hf_genfix's vs always run (wall, one process)",
           ratio(ratios),
           rerun_s=sorted(plain)[len(plain) // 2], shortcut_s=sorted(short)[len(short) // 2], skipped_runs=saved,
           architectures=len(sample))


def _noise_apart(differ: list[str]) -> tuple[list[str], list[str]]:
    """(differences, noise) of the rerun side's report against the shortcut's. Two kinds come from upstream's run
    not being bitwise reproducible, not from the shortcut: a scenario judged "rounding" when rerun and "identical"
    when its observation was hf_genfix's own (5.25's static cache: the same call twice, patches on, differs by
    3.6e-07 at step 3 on mellum), with the summary's counts of the two; and the figure in a saved folder's upstream
    failure, read from weights a release leaves to chance on reload (nan in one run, 1.94 in the next; seeding the
    reload would hide the defect: the missing weights then come back as the seed built them), where the verdicts
    agree and the two details differ in their numbers only."""
    import re

    def parts(line: str) -> tuple[str, str, str]:
        path, _, rest = line.partition(": ")
        one, _, other = rest.partition(" != ")
        return path, one, other

    def numbers_apart(text: str) -> str:
        return re.sub(r"nan|inf|[-+]?\d[\d.e+-]*", "#", text)

    flipped = {path[: -len("/verdict")] for path, one, other in map(parts, differ)
               if path.endswith("/differential/verdict") and (one, other) == ("rounding", "identical")}
    counts = {"/differential/counts/identical", "/differential/counts/rounding", "/differential/summary"}
    noise, kept = [], []
    for line in differ:
        path, one, other = parts(line)
        if any(path.startswith(f + "/") for f in flipped) or (flipped and path in counts) \
                or (path.startswith("/saved/pairs/") and path.endswith("/detail")
                    and numbers_apart(one) == numbers_apart(other)):
            noise.append(line)
        else:
            kept.append(line)
    return kept, noise


if __name__ == "__main__":
    main()
