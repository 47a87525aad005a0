"""What a plain user program meeting each defect imports, and what hf_genfix installs in such a program.

``hf-genfix doctor`` and ``hf-genfix list`` import every target module, so they see every patch decided. A user's
program imports far less: a patch whose target sits in a module that program never imports stays ``armed`` while
the defect hits it. So doctor runs, for each distinct set of imports, one fresh interpreter that imports
``hf_genfix`` and ``transformers`` and then what a program meeting the defect imports, and reads
``hf_genfix.status()`` there.

Each patch's program is the catalog's (``hf_genfix.catalog.program``: the top level of its folder's
``program.py``); a patch without one is reported as such.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Iterable, Mapping

from hf_genfix import _child, catalog

_CHILD = """
import json, sys
import hf_genfix, transformers
error = None
try:
    exec(compile(sys.argv[1], "<user program>", "exec"), {})
except Exception as exc:
    error = f"{type(exc).__name__}: {exc}"
print(json.dumps({"error": error, "states": {s.id: [s.state, s.reason] for s in hf_genfix.status()}}))
"""


# The key of the forking interpreter in PlainRun._procs (no program is named so).
_ALL = "*"

# The forking interpreter (argv[1]: {program name: its lines}). Each child runs _CHILD's code on its program and
# leaves its JSON in a file; the parent prints {program name: that JSON} as one line. The assert keeps the promise
# that the children start as fresh interpreters would, as far as hf_genfix and transformers go.
# The third-party libraries every program's `import transformers` imports anyway, imported once before forking.
PRELOADED = ("torch", "numpy", "safetensors", "tokenizers", "huggingface_hub", "jinja2", "yaml", "regex", "tqdm")
_FORKING = """
import importlib, json, os, sys, tempfile
for lib in PRELOADED:
    try:
        importlib.import_module(lib)
    except Exception:
        pass
assert not [m for m in sys.modules if m.split(".")[0] in ("transformers", "hf_genfix")]
programs = json.loads(sys.argv[1])
out_dir = tempfile.mkdtemp(prefix="hf_genfix_plain_")
children = {}
for name, lines in programs.items():
    pid = os.fork()
    if pid == 0:
        try:
            sys.argv[1:] = [lines]
            result = {}
            exec(compile(CHILD.replace("print(json.dumps(", "result.update(("), "<plain program>", "exec"),
                 {"result": result})
            with open(os.path.join(out_dir, name + ".json"), "w") as f:
                json.dump(result, f)
        finally:
            os._exit(0)
    children[name] = pid
results = {}
for name, pid in children.items():
    _, status = os.waitpid(pid, 0)
    path = os.path.join(out_dir, name + ".json")
    if os.path.exists(path):
        with open(path) as f:
            results[name] = json.load(f)
        os.unlink(path)
    else:
        results[name] = {"error": f"the program's interpreter failed (wait status {status})", "states": {}}
os.rmdir(out_dir)
print(json.dumps(results))
""".replace("CHILD", repr(_CHILD)).replace("PRELOADED", repr(PRELOADED))


def program_for(patch_id: str) -> Any:
    """The catalog's program of ``patch_id`` (None where it has none)."""
    try:
        return catalog.program(patch_id)
    except KeyError:
        return None


class PlainRun:
    """The fresh interpreters for some patches, started at once (one per distinct program) and read by
    ``results()``: they run while the caller does other work (doctor runs its probes meanwhile).

    Where the platform can fork, one interpreter first imports the third-party libraries that every program's
    ``import transformers`` imports anyway (torch, numpy, tokenizers, ...; no patch targets them, and neither
    ``hf_genfix`` nor ``transformers`` is imported there), then forks a child per program, which runs exactly the
    program: ``import hf_genfix, transformers`` and its lines. That is what a fresh interpreter of the program
    does, without importing torch once per program: half the CPU time (9 programs on 5.24.0: 17.6 s instead of
    33.4 s, 9.5 s instead of 16.8 s of wall time on 2 cores). Elsewhere each program gets an interpreter of its own."""

    def __init__(self, patches: Iterable[tuple[str, str]], environ: Mapping[str, str] | None = None,
                 timeout: float = 120.0):
        self.timeout = timeout
        # patch id -> its program; the programs that import the same run once (keyed by their imports)
        self.program_of = {pid: program_for(pid) for pid, _family in patches}
        self.imports = {p.imports: f"p{i}" for i, p in enumerate(
            sorted({p.imports: p for p in self.program_of.values() if p}.values(), key=lambda p: p.imports))}
        code = {name: imports for imports, name in self.imports.items()}
        # The children import nothing from the folder doctor runs in (a planted uuid.py or transformers.py would
        # run there): private empty working directory, -P, PYTHONPATH entries made absolute (hf_genfix._child).
        env = _child.environ(environ)
        # The child imports the hf_genfix this process runs, wherever it was imported from.
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in [env.get("PYTHONPATH")] if p])
        self._procs: dict[str, subprocess.Popen] = {}
        names = sorted(code)
        if hasattr(os, "fork") and names:
            # One interpreter for all (see the class docstring), its results keyed by program.
            self._procs[_ALL] = _child.popen(
                _child.argv(sys.executable, "-c", _FORKING, json.dumps({name: code[name] for name in names})),
                env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            return
        for name in names:
            self._procs[name] = _child.popen(
                _child.argv(sys.executable, "-c", _CHILD, code[name]), env=env, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True,
            )

    def results(self) -> dict[str, dict[str, Any]]:
        """patch id -> {program, imports, state, reason, error} in a fresh interpreter running that program."""
        import math
        import time

        outputs: dict[str, dict[str, Any]] = {}
        # The interpreters run at once (one per program where there is no fork): the budget is the timeout per
        # round of as many as there are cores, from now, not per communicate() -- the first program waited for
        # shares the cores with all the others (tf-5.2.0 under load: causal-lm timed out at 120 s).
        budget = self.timeout * max(1, math.ceil(len(self._procs) / (os.cpu_count() or 1)))
        deadline = time.monotonic() + budget
        for name, proc in self._procs.items():
            try:
                out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                outputs[name] = {"error": f"the program took over {budget:.0f} s", "states": {}}
                continue
            try:
                outputs[name] = json.loads(out.strip().splitlines()[-1])
            except (ValueError, IndexError):
                outputs[name] = {"error": f"the interpreter failed (exit {proc.returncode}): "
                                          f"{err.strip().splitlines()[-1:] or ''}", "states": {}}
        if _ALL in outputs:  # the forking interpreter: its own failure stands for every program's
            every = outputs.pop(_ALL)
            outputs = every if "states" not in every else {name: every for name in self.imports.values()}
        records: dict[str, dict[str, Any]] = {}
        for pid, program in self.program_of.items():
            if program is None:
                records[pid] = {"program": None, "imports": None, "state": None, "reason": "no user program known",
                                "error": None}
                continue
            got = outputs.get(self.imports[program.imports]) or {
                "error": "the program's interpreter reported nothing", "states": {}}
            state, reason = got["states"].get(pid, [None, "the program's interpreter does not know this patch"])
            records[pid] = {"program": program.path, "imports": program.imports, "state": state, "reason": reason,
                            "error": got["error"]}
        return records
