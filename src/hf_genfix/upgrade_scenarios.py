"""The generation scenarios ``hf-genfix upgrade-check --model PATH`` runs on each transformers release.

``python -m hf_genfix.upgrade_scenarios PATH OUT.json [--trust-remote-code]`` loads the checkpoint once and runs
every scenario below, each on its own (one failing scenario does not stop the others), and writes per scenario
the generated token ids and the scores of every step, or the error. The upgrade check runs it in a subprocess of
each environment (the release you run and the candidate), with hf_genfix active and with ``HF_GENFIX=off``, and
compares the JSON files in the parent. Prompts are token ids drawn from the model's vocabulary with a fixed seed
(no tokenizer is needed, and a tokenizer change across releases cannot hide a generation change).

The scenarios, and the patch families that can account for a difference in each:
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from typing import Any, Callable

NEW_TOKENS = 8
COMMON = ("prepare-inputs", "decoding", "models", "sliding-window", "remote-code")
# name -> (what it runs, the patch families that can change its output)
SCENARIOS: dict[str, tuple[str, tuple[str, ...]]] = {
    "greedy": ("one prompt, greedy", COMMON),
    "greedy-batch-left": ("two prompts of different lengths, left-padded, greedy", COMMON + ("padding",)),
    "greedy-batch-right": ("the same two prompts right-padded, greedy", COMMON + ("padding",)),
    "sample": ("one prompt, do_sample=True, top_k=20, torch.manual_seed(0)", COMMON),
    "beam": ("one prompt, num_beams=3", COMMON),
    "prompt-lookup": ("a repetitive prompt, prompt_lookup_num_tokens=3, greedy", COMMON),
    "static-cache": ("one prompt, cache_implementation='static', greedy", COMMON),
    "generation-config": ("one prompt, the checkpoint's own generation_config (only max_new_tokens set)",
                          COMMON + ("padding",)),
    "save-reload": ("save_pretrained to a temporary folder, from_pretrained again, greedy", COMMON),
}
__doc__ += "\n".join(f"\n- ``{name}``: {what}" for name, (what, _) in SCENARIOS.items())


def _prompts(vocab: int, special: set[int]) -> tuple[list[int], list[int]]:
    import random

    rng = random.Random(0)
    usable = [i for i in range(min(vocab, 32000)) if i not in special] or list(range(vocab))
    return [rng.choice(usable) for _ in range(7)], [rng.choice(usable) for _ in range(4)]


def run(path: str, trust_remote_code: bool = False) -> dict[str, Any]:
    import torch
    import transformers

    torch.manual_seed(0)
    load = lambda p: transformers.AutoModelForCausalLM.from_pretrained(  # noqa: E731
        p, trust_remote_code=trust_remote_code).float().eval()
    out: dict[str, Any] = {"transformers": transformers.__version__, "model": path, "scenarios": {}}
    try:
        with _seen() as seen:
            model = load(path)
        out["load_patches_seen"] = seen()
    except Exception as exc:  # noqa: BLE001 - reported, the parent compares it
        out["error"] = _error(exc)
        return out
    gc = model.generation_config
    eos = gc.eos_token_id if not isinstance(gc.eos_token_id, list) else gc.eos_token_id[0]
    pad = gc.pad_token_id if gc.pad_token_id is not None else (eos if eos is not None else 0)
    vocab = model.get_input_embeddings().weight.shape[0]
    long, short = _prompts(vocab, {t for t in (pad, eos, gc.bos_token_id) if isinstance(t, int)})
    width = len(long)

    def batch(side: str) -> dict[str, Any]:
        rows, masks = [], []
        for p in (long, short):
            fill = [pad] * (width - len(p))
            rows.append(fill + p if side == "left" else p + fill)
            masks.append([0] * len(fill) + [1] * len(p) if side == "left" else [1] * len(p) + [0] * len(fill))
        return {"input_ids": torch.tensor(rows), "attention_mask": torch.tensor(masks)}

    one = {"input_ids": torch.tensor([long]), "attention_mask": torch.ones(1, width, dtype=torch.long)}
    loop = long[:3] * 3
    looped = {"input_ids": torch.tensor([loop]), "attention_mask": torch.ones(1, len(loop), dtype=torch.long)}
    plain = dict(max_new_tokens=NEW_TOKENS, pad_token_id=pad, return_dict_in_generate=True, output_scores=True)
    greedy = dict(plain, do_sample=False)

    def save_reload() -> Any:
        with tempfile.TemporaryDirectory() as tmp:
            model.save_pretrained(tmp)
            return load(tmp).generate(**one, **greedy)

    cases: dict[str, Callable[[], Any]] = {
        "greedy": lambda: model.generate(**one, **greedy),
        "greedy-batch-left": lambda: model.generate(**batch("left"), **greedy),
        "greedy-batch-right": lambda: model.generate(**batch("right"), **greedy),
        "sample": lambda: (torch.manual_seed(0), model.generate(**one, **dict(plain, do_sample=True, top_k=20)))[1],
        "beam": lambda: model.generate(**one, **dict(greedy, num_beams=3)),
        "prompt-lookup": lambda: model.generate(**looped, **dict(greedy, prompt_lookup_num_tokens=3)),
        "static-cache": lambda: model.generate(**one, **dict(greedy, cache_implementation="static")),
        "generation-config": lambda: model.generate(**one, max_new_tokens=NEW_TOKENS, return_dict_in_generate=True,
                                                    output_scores=True),
        "save-reload": save_reload,
    }
    for name, case in cases.items():
        with _seen() as seen:
            try:
                with torch.no_grad():
                    result = case()
                out["scenarios"][name] = {
                    "tokens": result.sequences.tolist(),
                    "scores": [s.float().tolist() for s in (result.scores or ())],
                }
            except Exception as exc:  # noqa: BLE001 - a failing scenario is a result
                out["scenarios"][name] = {"error": _error(exc)}
        out["scenarios"][name]["patches_seen"] = seen()
    out["patches"] = _patch_states()
    return out


class _seen:
    """``with _seen() as seen: ...; seen()``: the patches whose wrappers were called inside the block (empty
    without hf_genfix); the parent prefers them when it looks for the patch that accounts for a difference."""

    def __enter__(self) -> Callable[[], list[str]]:
        self._rec = None
        if "hf_genfix" in sys.modules:
            import hf_genfix

            self._cm = hf_genfix.recording()
            self._rec = self._cm.__enter__()
        return lambda: sorted(pid for pid, (calls, _) in self._rec.counts.items() if calls) if self._rec else []

    def __exit__(self, *exc: Any) -> None:
        if self._rec is not None:
            self._cm.__exit__(*exc)


def _patch_states() -> dict[str, str]:
    if "hf_genfix" not in sys.modules:
        return {}
    import hf_genfix

    return {r.id: r.state for r in hf_genfix.status()}


def _error(exc: BaseException) -> str:
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" (at {os.path.basename(where.filename)}:{where.lineno})" if where else ""
    return f"{type(exc).__name__}: {str(exc)[:300]}{at}"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    trust = "--trust-remote-code" in args
    args = [a for a in args if a != "--trust-remote-code"]
    if len(args) != 2:
        sys.stderr.write("usage: python -m hf_genfix.upgrade_scenarios MODEL_PATH OUT.json [--trust-remote-code]\n")
        return 2
    if os.environ.get("HF_GENFIX", "").lower() not in ("off", "0", "false", "no"):
        import hf_genfix  # noqa: F401 - active before transformers is imported, as in a user's program
    import warnings

    warnings.simplefilter("ignore")
    result = run(args[0], trust)
    with open(args[1], "w", encoding="utf-8") as fh:
        json.dump(result, fh)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
