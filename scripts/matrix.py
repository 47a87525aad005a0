#!/usr/bin/env python3
"""The transformers version matrix: the release list, the compat report, release-to-release diffs, the CI workflow.

The list of releases is derived from the manifests: for every boundary of every ``affected`` range, the last
release before it and the first release at or after it (found by walking the published releases in
scripts/transformers-releases.txt and keeping each adjacent pair where the range's verdict flips, so ``!=X.*``
exclusions and patch-release boundaries count), plus the oldest supported and the newest release. ``sync``
writes it into tox.ini's ``env_list``, the CI workflow, the verified range hf_genfix ships
(``patches/verified.json``) and docs/matrix.md's figures; tests/tooling/test_matrix.py fails when they drift.

    python scripts/matrix.py releases                  # the derived releases, one a line (--why: the boundaries)
    python scripts/matrix.py sync [--check]            # write the derived list into tox.ini and the CI workflow
    python scripts/matrix.py refresh                   # re-read the published releases from the package index
    python scripts/matrix.py run tf-5.12.0             # one env: doctor; on the suite releases with --sweep
                                                       # --differential, and the test suite
    python scripts/matrix.py all [-p 2]                # tox p over every env, then the report; prints the total time
    python scripts/matrix.py install tf-5.12.0         # pip install transformers==5.12.0 into this python
                                                       # (`newest`: the newest release of the matrix)
    python scripts/matrix.py doctor tf-5.12.0          # hf-genfix doctor -> tox-results/tf-5.12.0.json
    python scripts/matrix.py report                    # tox-results/*.json -> docs/compat-matrix.{md,json}; exit 1 on
                                                       # a range that disagrees with what was observed
    python scripts/matrix.py workflow [--check]        # (re)write .github/workflows/matrix.yml from the list
    python scripts/matrix.py ci-envs                   # the oldest, middle and newest suite envs, for .ci/run

It uses the standard library only (plus hf_genfix's manifest loader for ``report``), so ``tox -e report`` needs
neither torch nor transformers.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))  # matrixlib/, beside this script (also when loaded by path)
from matrixlib import files, judging, release_list, rendering, running  # noqa: E402,F401 - every part, for its tests


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/matrix.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("releases")
    p.add_argument("--why", action="store_true", help="the boundaries each release of the derived list judges")
    p = sub.add_parser("sync")
    p.add_argument("--check", action="store_true")
    sub.add_parser("refresh")
    p = sub.add_parser("run")
    p.add_argument("env_name")
    p.add_argument("pytest_args", nargs="*")
    p = sub.add_parser("all")
    p.add_argument("-p", "--parallel", type=int, default=2)
    sub.add_parser("ci-envs")
    p = sub.add_parser("install")
    p.add_argument("spec", help="tf-X, X, newest (of the matrix), or any pip requirement for transformers")
    p.add_argument("--torch-dir", type=Path, help="where the torch shared by every env is installed")
    p = sub.add_parser("doctor")
    p.add_argument("env_name")
    p = sub.add_parser("report")
    p.add_argument("--results", type=Path, default=files.RESULTS)
    p.add_argument("--keep-committed", action="store_true",
                   help="a release with no fresh result keeps its column from docs/compat-matrix.json (a partial "
                        "rerun) instead of failing the report")
    p = sub.add_parser("workflow")
    p.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "releases":
        if not args.why:
            print("\n".join(release_list.releases()))
            return 0
        from packaging.version import Version

        oldest = release_list.matrix_settings()["oldest_supported"]
        supported = [v for v in release_list.published() if Version(v) >= Version(oldest)]
        for pid, pairs in release_list.boundaries(release_list.catalog_manifests(), supported).items():
            print(f"{pid}: " + (", ".join(f"{a} | {b}" for a, b in pairs) or "no boundary in the supported range"))
        suite = ", ".join(release_list.suite_releases())
        print(f"oldest supported {supported[0]}, newest {supported[-1]}; suite: {suite}")
        return 0
    if args.command == "sync":
        return release_list.sync(args.check)
    if args.command == "refresh":
        return release_list.refresh()
    if args.command == "run":
        return running.run(args.env_name, args.pytest_args)
    if args.command == "all":
        return running.run_all(args.parallel)
    if args.command == "ci-envs":
        print(",".join(release_list.ci_envs()))
        return 0
    if args.command == "install":
        return running.install(args.spec, args.torch_dir, os.environ.get("GENFIX_TORCH"))
    if args.command == "doctor":
        return running.doctor(args.env_name)
    if args.command == "report":
        return rendering.report(args.results, keep_committed=args.keep_committed)
    return release_list.workflow(args.check)


if __name__ == "__main__":
    raise SystemExit(main())
