"""The generation scenarios ``hf-genfix upgrade-check --model PATH`` runs on each transformers release.

``python -m hf_genfix.upgrade_scenarios PATH OUT.json [--trust-remote-code]`` loads the checkpoint once and runs
every scenario below, each on its own (one failing scenario does not stop the others), and writes per scenario
the generated token ids and the scores of every step, or the error. The upgrade check runs it in a subprocess of
each environment (the release you run and the candidate), with hf_genfix active and with ``HF_GENFIX=off``, and
compares the JSON files in the parent. Prompts are token ids drawn from the model's vocabulary with a fixed seed
(no tokenizer is needed, and a tokenizer change across releases cannot hide a generation change).

Where the folder holds a tokenizer, two more scenarios go through it as a program would: its pad token, its
padding side, its chat template. A changed pad token or padding side changes their input ids, so the parent sees
the difference; what each release loads (pad token, padding side, chat template) is written too.

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
# Only where the checkpoint folder holds a tokenizer (a file ``AutoTokenizer`` reads).
TOKENIZER_SCENARIOS: dict[str, tuple[str, tuple[str, ...]]] = {
    "tokenizer-batch": ("two texts through the folder's tokenizer, padding=True (its pad token and padding side), "
                        "greedy", COMMON + ("padding",)),
    "chat-template": ("one user message through the tokenizer's chat template (add_generation_prompt=True), "
                      "greedy; only where it has one", COMMON + ("padding",)),
}
ALL_SCENARIOS = {**SCENARIOS, **TOKENIZER_SCENARIOS}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "vocab.txt")
TEXTS = ["The quick brown fox jumps over the lazy dog, and then", "Hello"]
__doc__ += "\n".join(f"\n- ``{name}``: {what}" for name, (what, _) in ALL_SCENARIOS.items())


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
        out["patch_calls"] = seen.calls
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
    tokenizer = _tokenizer(path, trust_remote_code, out)
    if tokenizer is not None:
        def through_tokenizer() -> Any:
            if tokenizer is _FAILED:
                raise RuntimeError(f"the tokenizer does not load: {out['tokenizer']['error']}")
            enc = tokenizer(TEXTS, padding=True, return_tensors="pt")
            enc = {k: enc[k] for k in ("input_ids", "attention_mask") if k in enc}  # no token_type_ids
            return model.generate(**enc, max_new_tokens=NEW_TOKENS, do_sample=False, return_dict_in_generate=True,
                                  output_scores=True)

        cases["tokenizer-batch"] = through_tokenizer
        if tokenizer is not _FAILED and getattr(tokenizer, "chat_template", None):
            def chat() -> Any:
                enc = tokenizer.apply_chat_template([{"role": "user", "content": TEXTS[0]}],
                                                    add_generation_prompt=True, return_tensors="pt",
                                                    return_dict=True)
                enc = {k: enc[k] for k in ("input_ids", "attention_mask") if k in enc}
                return model.generate(**enc, max_new_tokens=NEW_TOKENS, do_sample=False,
                                      return_dict_in_generate=True, output_scores=True)

            cases["chat-template"] = chat
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
        out["scenarios"][name]["patch_calls"] = seen.calls
    out["patches"] = _patch_states()
    return out


_FAILED = object()


def _tokenizer(path: str, trust_remote_code: bool, out: dict[str, Any]) -> Any:
    """The folder's tokenizer (None when it has none; ``_FAILED`` when it does not load, which the tokenizer
    scenarios then report as their error), and its facts in ``out["tokenizer"]``."""
    if not any(os.path.exists(os.path.join(path, f)) for f in TOKENIZER_FILES):
        return None
    import transformers

    try:
        tok = transformers.AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    except Exception as exc:  # noqa: BLE001 - reported, the parent compares it
        out["tokenizer"] = {"error": _error(exc)}
        return _FAILED
    out["tokenizer"] = {"class": type(tok).__name__, "pad_token": tok.pad_token, "pad_token_id": tok.pad_token_id,
                        "padding_side": tok.padding_side, "eos_token": tok.eos_token,
                        "chat_template": bool(getattr(tok, "chat_template", None))}
    return tok


class _seen:
    """``with _seen() as seen: ...; seen()``: the patches whose wrappers were called inside the block (empty
    without hf_genfix); the parent prefers them when it looks for the patch that accounts for a difference, and
    names them (``seen.calls``: patch id -> calls) as the patches your models go through."""

    def __enter__(self) -> "_seen":
        self._rec = None
        if "hf_genfix" in sys.modules:
            import hf_genfix

            self._cm = hf_genfix.recording()
            self._rec = self._cm.__enter__()
        return self

    @property
    def calls(self) -> dict[str, int]:
        return {pid: n for pid, (n, _) in self._rec.counts.items() if n} if self._rec is not None else {}

    def __call__(self) -> list[str]:
        return sorted(self.calls)

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
