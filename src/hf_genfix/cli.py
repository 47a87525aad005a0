"""``hf-genfix`` / ``python -m hf_genfix``: list | doctor | run | upgrade-check.

Exit status: 0 success; 1 ``doctor`` found a failing patch (or a new defect with ``--sweep``); 2 a usage error,
a bad ``HF_GENFIX*`` environment (one line on stderr naming the variable, its value, the accepted values and the
closest name), or ``doctor`` without what its probes need (torch, the ``--device`` asked for; one line saying how
to get it); 3 ``doctor`` on a transformers release outside the range hf_genfix has verified; ``run`` returns the
program's own status (127 / 126 when the program cannot be started); ``upgrade-check`` exits 1 when something
unexplained changes on the candidate release (``docs/upgrading.md``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any, Sequence

# What HF_GENFIX_<ID> accepts (_config: any case; empty means auto).
TOGGLE_VALUES = "auto, on, off (also 1/0, true/false, yes/no)"
LIST_HEADER = ("states as a program sees them right after `import hf_genfix, transformers` "
               "(`hf-genfix doctor` imports every target and checks each patch)")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="hf-genfix", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_list = sub.add_parser("list", help="which patches exist and their state after `import transformers`")
    p_list.add_argument("--json", action="store_true", help="machine-readable output")
    sub.add_parser("doctor", help="run every patch's probe on this install", add_help=False)
    sub.add_parser("run", help="run a program with hf_genfix activated: hf-genfix run -- python app.py",
                   add_help=False)
    sub.add_parser("upgrade-check", add_help=False,
                   help="what changes for your models and tests with another transformers release: "
                        "hf-genfix upgrade-check 5.24.0 --model ./my-model -- pytest tests/")
    problems = environment_problems()
    if problems:
        sys.stderr.write(one_line(problems[0]) + "\n")
        if not _asks_for_help(argv):
            if argv[:1] == ["list"]:
                print_variables(problems, as_json="--json" in argv)
            return 2
    if argv and argv[0] in ("doctor", "list"):
        # Both print the unverified-release line at the top of their output: the library's log record of it
        # would say it a second time.
        import logging

        logging.getLogger("hf_genfix").addFilter(lambda record: not hasattr(record, "hf_genfix_unverified"))
    if argv and argv[0] in ("doctor", "run", "upgrade-check"):
        # Their own parsers own their arguments (run passes everything after it to the program).
        module = {"doctor": "hf_genfix.doctor", "run": "hf_genfix.runner",
                  "upgrade-check": "hf_genfix.upgrade"}[argv[0]]
        return int(importlib.import_module(module).main(argv[1:]) or 0)
    args = parser.parse_args(argv)
    return cmd_list(args.json)


# -- the environment ----------------------------------------------------------------------------------------------
def environment_problems(environ: Any = None) -> list[Any]:
    """A ``ConfigError`` for each ``HF_GENFIX*`` variable of ``environ`` that hf_genfix rejects (each checked
    on its own, so every bad one is named)."""
    from ._config import patch_ids
    from ._config import Config, ConfigError, is_ours

    environ = os.environ if environ is None else environ
    ids = patch_ids()
    problems = []
    for name in sorted(environ):
        if is_ours(name):
            try:
                Config.from_environ({name: environ[name]}, ids)
            except ConfigError as exc:
                problems.append(exc)
    return problems


def variables() -> list[tuple[str, str, str]]:
    """(name, accepted values, meaning) of every HF_GENFIX* variable this install accepts."""
    from ._config import patch_ids
    from ._config import PREFIX, env_name

    switch = "on, off (also 1/0, true/false, yes/no)"
    rows = [
        (PREFIX, switch, "off: install no patch"),
        (f"{PREFIX}_STRICT", switch, "on: a patch that cannot be installed raises hf_genfix.PatchError, and a "
                                     "mistyped HF_GENFIX* variable raises ConfigError at import"),
        (f"{PREFIX}_LOG", "debug, info, warning, error",
         "level of the hf_genfix logger; info: one summary line; debug: also each decision and every call a "
         "patch changes"),
    ]
    rows += [(env_name(pid), TOGGLE_VALUES, f"the {pid} patch") for pid in patch_ids()]
    return rows


def one_line(exc: Any) -> str:
    """The one line ``hf-genfix`` prints for a bad variable: name, value, accepted values, closest name."""
    if exc.variable and exc.variable not in {name for name, _, _ in variables()}:
        accepted = {name: values for name, values, _ in variables()}.get(exc.closest or "", "auto, on, off")
        hint = f"did you mean {exc.closest} (accepted values: {accepted})? " if exc.closest else ""
        return (f"hf-genfix: ConfigError: {exc.variable}={exc.value!r}: no hf_genfix patch or setting has this "
                f"name; {hint}`hf-genfix list` prints every name")
    return f"hf-genfix: ConfigError: {exc}"


def print_variables(problems: list[Any], as_json: bool = False) -> None:
    """The valid names, and the bad variables of this environment marked."""
    bad = {exc.variable: exc for exc in problems}
    closest = {exc.closest: exc.variable for exc in problems if exc.closest}
    if as_json:
        json.dump({
            "config_errors": [{"variable": e.variable, "value": e.value, "closest": e.closest,
                               "message": str(e)} for e in problems],
            "variables": [{"name": n, "values": v, "meaning": m} for n, v, m in variables()],
        }, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    print("HF_GENFIX* variables this install accepts (values in any case; empty means the default):")
    rows = variables()
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    for name, values, meaning in rows:
        mark = ""
        if name in bad:
            mark = f"   <-- set to {bad[name].value!r}: not accepted"
        elif name in closest:
            mark = f"   <-- did you mean this for {closest[name]}?"
        print(f"  {name.ljust(widths[0])}  {values.ljust(widths[1])}  {meaning}{mark}")
    unknown = [e for e in problems if e.variable not in {n for n, _, _ in rows}]
    if unknown:
        print("set in this environment, names no patch or setting:")
        for e in unknown:
            print(f"  {e.variable}={e.value!r}   <-- " + (f"did you mean {e.closest}?" if e.closest else "unknown"))


def _asks_for_help(argv: list[str]) -> bool:
    if not argv or argv[0] in ("-h", "--help"):
        return True
    if argv[0] == "run":
        return argv[1:2] in (["-h"], ["--help"])
    return bool({"-h", "--help"} & set(argv))


# -- list ---------------------------------------------------------------------------------------------------------
def cmd_list(as_json: bool) -> int:
    """The states a plain program has once it imported hf_genfix and transformers, nothing else: an ``armed``
    patch names the module whose import installs it."""
    import hf_genfix
    from hf_genfix._registry import transformers_version

    try:
        importlib.import_module("transformers")
    except ImportError:
        pass
    version = transformers_version()
    records = hf_genfix.status()
    if as_json:
        json.dump({"transformers": version, "patches": [r.to_dict() for r in records]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from hf_genfix.catalog import outside_verified

    unverified = outside_verified(version)
    if unverified:
        print(unverified)
    print(f"transformers {version}: {LIST_HEADER}" if version else "transformers is not installed: nothing to patch")
    from hf_genfix.catalog import FAMILIES

    rows = [("id", "state", "affected", "summary")] + [(r.id, r.state, r.affected, r.summary) for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    line = lambda row: "  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[3]  # noqa: E731
    print(line(rows[0]))
    families = {r.family: None for r in records}
    for family in [*(f for f in FAMILIES if f in families), *(f for f in families if f not in FAMILIES)]:
        print(f"\n{family}: {FAMILIES.get(family, '')}".rstrip(": "))
        for r in records:
            if r.family == family:
                print(line((r.id, r.state, r.affected, r.summary)))
    print()
    for r in records:
        if r.state in ("armed", "drift", "failed", "pending", "forced"):
            print(f"  {r.id}: {r.state}: {r.reason}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
