"""What a plain user program meeting each defect imports, and what hf_genfix installs in such a program.

``hf-genfix doctor`` and ``hf-genfix list`` import every target module, so they see every patch decided. A user's
program imports far less: a patch whose target sits in a module that program never imports stays ``armed`` while
the defect hits it. So doctor runs, for each distinct program below, one fresh interpreter that imports
``hf_genfix`` and ``transformers`` and then only what the program names, and reads ``hf_genfix.status()`` there.

The table is data: a program per family, overridden per patch id where the defect lives elsewhere (a tokenizer,
one model class). A patch id absent from ``BY_ID`` whose family is absent from ``BY_FAMILY`` has no program and
is reported as such (tests/tooling/test_doctor.py checks that every shipped manifest has one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Iterable, Mapping

from hf_genfix import _child

# program name -> the lines a program meeting the defect runs after `import hf_genfix, transformers`.
PROGRAMS: dict[str, str] = {
    # A tokenizer loaded for batched inputs (pad-token, padding-side).
    "tokenizer": "from transformers import AutoTokenizer",
    # Language-model training with the causal-LM collator.
    "collator": "from transformers import AutoTokenizer, DataCollatorForLanguageModeling",
    # generate() on a decoder-only model: from_pretrained resolves AutoModelForCausalLM to a concrete class,
    # whose module is what gets imported (AutoModelForCausalLM alone imports no generation code).
    "causal-lm": "from transformers import LlamaForCausalLM",
    "phi3": "from transformers import Phi3ForCausalLM",
    "gpt-neox": "from transformers import GPTNeoXForCausalLM",
    "rwkv": "from transformers import RwkvForCausalLM",
    "phimoe": "from transformers import PhimoeForCausalLM",
    "qwen2-moe": "from transformers import Qwen2MoeForCausalLM",
    "jetmoe": "from transformers import JetMoeForCausalLM",
    "gemma2": "from transformers import Gemma2ForCausalLM",
    "speech-to-text-2": "from transformers import Speech2Text2ForCausalLM",
    # A trust_remote_code load: from_pretrained fetches the class through dynamic_module_utils, and the remote
    # modeling file written for 4.3x-4.4x imports the mask helpers and the model and generation bases.
    "remote-code": "from transformers import AutoModelForCausalLM\nimport transformers.dynamic_module_utils\n"
                   "import transformers.modeling_utils, transformers.generation.utils\n"
                   "try:\n    import transformers.modeling_attn_mask_utils\nexcept ImportError:\n    pass",
    "gemma3-vlm": "from transformers import Gemma3ForConditionalGeneration",
    "gemma4-vlm": "from transformers import Gemma4ForConditionalGeneration",
    "kosmos-2": "from transformers import Kosmos2ForConditionalGeneration",
    "falcon-h1": "from transformers import FalconH1ForCausalLM",
    "mamba": "from transformers import MambaForCausalLM",
    "falcon-mamba": "from transformers import FalconMambaForCausalLM",
    "mamba2": "from transformers import Mamba2ForCausalLM",
    "zamba": "from transformers import ZambaForCausalLM",
    "zamba2": "from transformers import Zamba2ForCausalLM",
    "xglm": "from transformers import XGLMForCausalLM",
    "fsmt": "from transformers import FSMTForConditionalGeneration",
    "led": "from transformers import LEDForConditionalGeneration",
    "mvp": "from transformers import MvpForConditionalGeneration",
    "nllb-moe": "from transformers import NllbMoeForConditionalGeneration",
    "paligemma": "from transformers import PaliGemmaForConditionalGeneration",
    "seamless-m4t": "from transformers import SeamlessM4TForTextToText",
    "seamless-m4t-v2": "from transformers import SeamlessM4Tv2ForTextToText",
    "idefics2": "from transformers import Idefics2ForConditionalGeneration",
    "idefics3": "from transformers import Idefics3ForConditionalGeneration",
    "smolvlm": "from transformers import SmolVLMForConditionalGeneration",
    "qwen2-vl": "from transformers import Qwen2VLForConditionalGeneration",
    "llava": "from transformers import LlavaForConditionalGeneration",
    "qwen2-5-vl": "from transformers import Qwen2_5_VLForConditionalGeneration",
}

BY_FAMILY: dict[str, str] = {
    "padding": "causal-lm",
    "prepare-inputs": "causal-lm",
    "sliding-window": "causal-lm",
    "decoding": "causal-lm",  # drafting too: generation.utils imports candidate_generator
    "remote-code": "causal-lm",  # those that need the remote repo's own imports are in BY_ID
}

BY_ID: dict[str, str] = {
    "model-idefics2-uncached-pixels": "idefics2",
    "model-idefics3-uncached-pixels": "idefics3",
    "model-smolvlm-uncached-pixels": "smolvlm",
    "pad-token": "tokenizer",
    "padding-side": "tokenizer",
    "pad-token-collator": "collator",
    "remote-code-tokenizer-pad": "tokenizer",
    "prepare-inputs-logits-to-keep": "phi3",
    "decoding-gpt-neox-static-cache": "gpt-neox",
    "model-rwkv-batch": "rwkv",
    "model-kosmos2-padded-positions": "kosmos-2",
    "model-fsmt-cached-positions": "fsmt",
    "model-fsmt-static-cache": "fsmt",
    "model-fsmt-uncached-mask": "fsmt",
    "model-led-static-cache": "led",
    "model-mvp-static-cache": "mvp",
    "model-nllb-moe-static-cache": "nllb-moe",
    "model-paligemma-static-cache": "paligemma",
    "model-paligemma-uncached-prefix": "paligemma",
    "model-llava-legacy-decode-mask": "llava",
    "model-qwen2-vl-rope-deltas": "qwen2-vl",
    "model-qwen2-vl-padded-deltas": "qwen2-vl",
    "model-qwen2-5-vl-padded-deltas": "qwen2-5-vl",
    "model-qwen2-vl-rope-deltas-steps": "qwen2-vl",
    "model-qwen2-5-vl-rope-deltas": "qwen2-5-vl",
    "model-qwen2-5-vl-rope-deltas-steps": "qwen2-5-vl",
    "model-seamless-m4t-static-cache": "seamless-m4t",
    "model-seamless-m4t-v2-static-cache": "seamless-m4t-v2",
    "model-falcon-h1-chunk-state": "falcon-h1",
    "model-mamba-continuation": "mamba",
    "model-mamba-state-chunk": "mamba",
    "model-falcon-mamba-state-chunk": "falcon-mamba",
    "model-falcon-mamba-continuation": "falcon-mamba",
    "model-mamba2-continuation": "mamba2",
    "model-zamba-chunk-state": "zamba",
    "model-zamba2-step-dt-limit": "zamba2",
    "model-zamba2-chunk-scan": "zamba2",
    "model-xglm-positions": "xglm",
    "sliding-window-full-cache-phimoe": "phimoe",
    "sliding-window-full-cache-qwen2-moe": "qwen2-moe",
    "model-jetmoe-static-cache": "jetmoe",
    "sliding-window-gemma2-decode-mask": "gemma2",
    "model-speech-to-text-2-positions": "speech-to-text-2",
    **{pid: "remote-code" for pid in (
        "remote-code-attn-mask-utils", "remote-code-cache-api", "remote-code-config-defaults",
        "remote-code-extract-past", "remote-code-mask-warning", "remote-code-model-methods",
        "remote-code-config-generation-defaults", "remote-code-tied-weights", "remote-code-init-buffers", "remote-code-init-weights",
        "remote-code-num-hidden-layers", "remote-code-removed-names", "remote-code-reorder-cache", "remote-code-rope-scaling",
        "remote-code-update-kwargs")},
    "sliding-window-image-index-gemma3": "gemma3-vlm",
    "sliding-window-image-mask-gemma3": "gemma3-vlm",
    "sliding-window-image-static-gemma3": "gemma3-vlm",
    "sliding-window-image-generate-static-gemma3": "gemma3-vlm",
    "sliding-window-image-generate-static-gemma4": "gemma4-vlm",
    "sliding-window-image-mask-gemma4": "gemma4-vlm",
    "sliding-window-image-static-gemma4": "gemma4-vlm",
}

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


def program_for(patch_id: str, family: str) -> str | None:
    """The name of the program that meets ``patch_id``'s defect (None when the table has none)."""
    return BY_ID.get(patch_id) or BY_FAMILY.get(family)


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
        self.program_of = {pid: program_for(pid, family) for pid, family in patches}
        # The children import nothing from the folder doctor runs in (a planted uuid.py or transformers.py would
        # run there): private empty working directory, -P, PYTHONPATH entries made absolute (hf_genfix._child).
        env = _child.environ(environ)
        # The child imports the hf_genfix this process runs, wherever it was imported from.
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in [env.get("PYTHONPATH")] if p])
        self._procs: dict[str, subprocess.Popen] = {}
        names = sorted({p for p in self.program_of.values() if p})
        if hasattr(os, "fork") and names:
            # One interpreter for all (see the class docstring), its results keyed by program.
            self._procs[_ALL] = _child.popen(
                _child.argv(sys.executable, "-c", _FORKING, json.dumps({name: PROGRAMS[name] for name in names})),
                env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            return
        for name in names:
            self._procs[name] = _child.popen(
                _child.argv(sys.executable, "-c", _CHILD, PROGRAMS[name]), env=env, stdout=subprocess.PIPE,
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
            outputs = every if "states" not in every else {name: every for name in set(self.program_of.values())}
        records: dict[str, dict[str, Any]] = {}
        for pid, name in self.program_of.items():
            if name is None:
                records[pid] = {"program": None, "imports": None, "state": None, "reason": "no user program known",
                                "error": None}
                continue
            got = outputs.get(name) or {"error": "the program's interpreter reported nothing", "states": {}}
            state, reason = got["states"].get(pid, [None, "the program's interpreter does not know this patch"])
            records[pid] = {"program": name, "imports": PROGRAMS[name], "state": state, "reason": reason,
                            "error": got["error"]}
        return records
