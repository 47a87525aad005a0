"""What the remote-code compatibility layer costs a remote-code model's ``generate()``: with hf_genfix vs inside
``hf_genfix.disabled()``, median ratio of paired runs with its spread.

    python benchmarks/remote_code.py [--pairs 15] [--new 64]

Two trust_remote_code repos written to a temporary folder and loaded as users load them
(``AutoConfig.from_pretrained(..., trust_remote_code=True)``, ``AutoModelForCausalLM.from_config``):

- current API: a remote model that subclasses the release's own Llama (what well-kept remote code looks like).
  The layer only checks and passes through; both sides must give the same tokens.
- old API (where it runs without the layer, i.e. before the release that removed what it calls): the
  DeepSeek-V2-style tiny model of ``hf_genfix.oracles.legacy_models``. Where it cannot run without the layer,
  only the time with it is printed (there is nothing to compare against).

Each pair runs both sides back to back in alternating order; times are this process's CPU time with the garbage
collector paused (benchmarks/_timing.py). Target: the current-API ratio <= 1.01x.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
from pathlib import Path

from _paired import ratio, report
from _timing import cpu_timed

os.environ.setdefault("OMP_NUM_THREADS", "1")

CONFIG = """
from transformers import LlamaConfig


class CurrentConfig(LlamaConfig):
    model_type = "current-api"
"""

MODELING = """
from transformers import LlamaForCausalLM

from .configuration_current import CurrentConfig


class CurrentForCausalLM(LlamaForCausalLM):
    config_class = CurrentConfig
"""


def _current_repo(folder: Path) -> Path:
    from hf_genfix.oracles.tiny import tiny_config

    (folder / "configuration_current.py").write_text(CONFIG)
    (folder / "modeling_current.py").write_text(MODELING)
    config = {k: v for k, v in tiny_config("llama").to_dict().items() if not k.startswith("_")}
    config.update(model_type="current-api", architectures=["CurrentForCausalLM"],
                  auto_map={"AutoConfig": "configuration_current.CurrentConfig",
                            "AutoModelForCausalLM": "modeling_current.CurrentForCausalLM"})
    (folder / "config.json").write_text(json.dumps(config, default=str))
    return folder


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=15)
    parser.add_argument("--new", type=int, default=64)
    args = parser.parse_args()

    import torch
    import transformers

    import hf_genfix
    from hf_genfix.oracles.generation import left_pad
    from hf_genfix.oracles.legacy import load_remote_model
    from hf_genfix.oracles.legacy_models import load_family, write_family

    torch.set_num_threads(1)
    rows = [[(7 * i + 3 * j) % 120 + 3 for j in range(8 + 3 * i)] for i in range(4)]
    ids, mask = left_pad(rows)
    kwargs = dict(attention_mask=mask, do_sample=False, max_new_tokens=args.new, min_new_tokens=args.new,
                  pad_token_id=0)
    code = 0
    print(f"transformers {transformers.__version__}; batch 4, {args.new} new tokens, greedy, {args.pairs} pairs")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "current").mkdir()
        current = load_remote_model(_current_repo(Path(tmp) / "current"))
        old = load_family(write_family("deepseek", Path(tmp) / "old"))
        for label, model in (("current API", current), ("old API (DeepSeek-V2 style)", old)):
            def run(on: bool):
                with (contextlib.nullcontext() if on else hf_genfix.disabled()), torch.no_grad():
                    return cpu_timed(lambda: model.generate(ids, **kwargs))

            try:
                run(False)
                runs_without = True
            except Exception as exc:  # noqa: BLE001 - the old API on a release that removed it: no baseline
                runs_without = False
                why = f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
            run(True)
            if not runs_without:
                times = [run(True)[0] for _ in range(max(3, args.pairs // 3))]
                report("remote_code", f"{label}: with the layer only (upstream cannot run it: {why})",
                       f"{statistics.median(times) * 1e3:.1f} ms per generate()", release=transformers.__version__,
                       model=label)
                continue
            ratios = []
            for i in range(args.pairs):
                sides = (True, False) if i % 2 == 0 else (False, True)
                got = {on: run(on) for on in sides}
                if not torch.equal(got[True][1], got[False][1]):
                    print(f"{label}: other tokens with the layer than without")
                    code = 1
                ratios.append(got[True][0] / got[False][0])
            summary = ratio(ratios)
            report("remote_code", f"{label}: generate() with / without hf_genfix", summary,
                   target=1.01 if label == "current API" else None, release=transformers.__version__, model=label)
            if label == "current API" and summary.low > 1.01:
                code = 1
    return code


if __name__ == "__main__":
    raise SystemExit(main())
