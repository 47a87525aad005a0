"""``hf-genfix`` / ``python -m hf_genfix``: list | doctor | run."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="hf-genfix", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_list = sub.add_parser("list", help="which patches exist and what each does on this install")
    p_list.add_argument("--json", action="store_true", help="machine-readable output")
    sub.add_parser("doctor", help="run every patch's probe on this install", add_help=False)
    sub.add_parser("run", help="run a program with hf_genfix activated: hf-genfix run -- python app.py",
                   add_help=False)
    if argv and argv[0] in ("doctor", "run"):
        # Their own parsers own their arguments (run passes everything after it to the program).
        module = {"doctor": "hf_genfix.doctor", "run": "hf_genfix.runner"}[argv[0]]
        return int(importlib.import_module(module).main(argv[1:]) or 0)
    args = parser.parse_args(argv)
    return cmd_list(args.json)


def load_targets() -> str | None:
    """Import every target module so each patch is decided; returns the transformers version (None if absent)."""
    import hf_genfix
    from hf_genfix._registry import transformers_version

    try:
        importlib.import_module("transformers")
    except ImportError:
        return None
    for manifest in hf_genfix._default().manifests():
        for module in manifest.target_modules:
            try:
                importlib.import_module(module)
            except ImportError:
                pass  # a module this release does not have: the patch stays pending (or not-needed)
    return transformers_version()


def cmd_list(as_json: bool) -> int:
    import hf_genfix

    version = load_targets()
    records = hf_genfix.status()
    if as_json:
        json.dump({"transformers": version, "patches": [r.to_dict() for r in records]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(f"transformers {version or 'is not installed: nothing to patch'}")
    rows = [("id", "state", "affected", "summary")] + [
        (r.id, r.state, r.affected, r.summary) for r in records
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[3])
    for r in records:
        if r.state in ("drift", "failed", "pending", "forced"):
            print(f"  {r.id}: {r.state}: {r.reason}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
