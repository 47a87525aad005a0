"""``hf-genfix doctor --sweep``: the general oracles over every decoder-only architecture of the installed release.

The catalog (patches/) only knows the defects somebody found. The sweep looks for the next ones: for each
decoder-only model type this release can build tiny from its config, it runs the generation paths that have
broken before -- cached against uncached, a left-padded batch against each row alone, a hand-written decode loop,
generation past a sliding window, assisted and prompt-lookup decoding, beam search, chunked prefill and a static
cache -- against the no-cache reference, with the patches installed as the user has them. A failure is then
retried with every patch off (a failure that goes away is caused by hf_genfix itself) and with each patch that is
not installed forced on (a failure one of them removes is explained by the catalog; if that patch's range excludes
this release, the catalog is wrong). What is left is reported as an unknown defect: architecture, scenario, step,
logit difference.

The scenario oracles are the families' own (``oracles.decode``, ``oracles.sliding``, ``oracles.generation``);
only beam search is written here.
"""

from __future__ import annotations

import time
import traceback
from typing import Any, Callable, Iterable, Sequence

from . import decode, sliding
from .generation import check_rows_against_reference, generate_steps, left_pad
from .outcome import DefectObserved, ProbeSkipped
from .precision import cast, tolerance
from .reference import reference_logits
from .tiny import tiny_config

WINDOW = sliding.WINDOW
MAX_PARAMS = 2_000_000
# Words in an exception that mean "this architecture does not do that" rather than "this is broken".
_UNSUPPORTED = ("not support", "isn't supported", "is not supported", "not compatible", "not implemented",
                "doesn't support", "does not have", "not available", "only supported", "requires", "cannot use")
# Scenarios that rewind, chunk or pre-allocate an attention KV cache (recurrent state cannot do that).
_NEEDS_KV = ("manual-loop", "assisted", "prompt-lookup", "chunked-prefill", "static-cache")

Scenario = Callable[["Subject"], dict]
SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str) -> Callable[[Scenario], Scenario]:
    def register(func: Scenario) -> Scenario:
        SCENARIOS[name] = func
        return func

    return register


# -- the architectures ------------------------------------------------------------------------------------------
def decoder_only_types() -> list[str]:
    """Model types with a causal-LM head that are neither masked LMs nor encoder-decoders."""
    from transformers.models.auto import modeling_auto as auto

    causal = set(auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    others = set(getattr(auto, "MODEL_FOR_MASKED_LM_MAPPING_NAMES", {}))
    others |= set(getattr(auto, "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", {}))
    return sorted(causal - others)


class Subject:
    """One architecture built tiny: the target model, and a draft of the same type (another seed) on demand."""

    def __init__(self, model_type: str):
        self.model_type = model_type
        self.overrides = _sliding_overrides(model_type)
        self.sliding = bool(self.overrides)
        self.model = build(model_type, seed=0, **self.overrides)
        self._draft: Any = None
        vocab = self.model.config.get_text_config().vocab_size if hasattr(self.model.config, "get_text_config") \
            else self.model.config.vocab_size
        self.vocab = min(int(vocab), 128)
        self.kv_cache = self._check_causal_and_cache()

    def _check_causal_and_cache(self) -> bool:
        """Skip what is not a causal LM here (an encoder used as a decoder attends to later tokens); say whether
        the model keeps an attention KV cache (recurrent models keep a state that cannot be rewound)."""
        import torch

        (row,) = self.rows(8, seed=99)
        full = reference_logits(self.model, row)
        prefix = reference_logits(self.model, row[:5])
        if not float((full[:5] - prefix).abs().max()) <= tolerance():
            raise ProbeSkipped("not causal with its default config (an encoder used as a decoder)")
        ids = torch.tensor([row], device=self.model.device)
        with torch.no_grad():
            out = self.model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True)
        cache = getattr(out, "past_key_values", None) or getattr(out, "cache", None)
        try:
            return cache is not None and int(cache.get_seq_length()) == len(row)
        except Exception:  # noqa: BLE001 - legacy tuples, recurrent states: no rewindable KV cache
            return isinstance(cache, tuple)

    @property
    def draft(self) -> Any:
        if self._draft is None:
            self._draft = build(self.model_type, seed=1, **self.overrides)
        return self._draft

    def rows(self, *lengths: int, seed: int = 0) -> list[list[int]]:
        import torch

        gen = torch.Generator().manual_seed(seed)
        return [torch.randint(3, self.vocab, (n,), generator=gen, device="cpu").tolist() for n in lengths]


def _sliding_overrides(model_type: str) -> dict[str, Any]:
    """A window of 8 for architectures whose config has one (so a few dozen tokens go well past it)."""
    config = tiny_config(model_type)
    if getattr(config, "sliding_window", None) is None and not hasattr(type(config)(), "sliding_window"):
        return {}
    out: dict[str, Any] = {"sliding_window": WINDOW}
    if hasattr(config, "use_sliding_window"):
        out.update(use_sliding_window=True, max_window_layers=1)
    return out


def build(model_type: str, seed: int = 0, **overrides: Any) -> Any:
    """A tiny causal LM of ``model_type``; ``ProbeSkipped`` when the release cannot build one that is tiny."""
    import torch
    from transformers import AutoModelForCausalLM

    config = tiny_config(model_type, **overrides)
    if _composite(config):
        raise ProbeSkipped("composite config (vision/audio parts): not built tiny from a text config")
    try:
        with torch.device("meta"):
            params = sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())
    except ProbeSkipped:
        raise
    except Exception as exc:  # noqa: BLE001 - a config the tiny defaults do not satisfy
        raise ProbeSkipped(f"cannot build from a tiny config: {type(exc).__name__}: {_short(exc)}") from exc
    if params > MAX_PARAMS:
        raise ProbeSkipped(f"the tiny config still gives {params / 1e6:.1f}M parameters")
    torch.manual_seed(seed)
    with torch.no_grad(), torch.device("cpu"):  # CUDA's generator would draw other weights for the seed
        model = AutoModelForCausalLM.from_config(config)
    return cast(model.float())


def _composite(config: Any) -> bool:
    from transformers import PretrainedConfig

    if getattr(config, "sub_configs", None):
        return True
    return any(isinstance(v, PretrainedConfig) for v in vars(config).values())


# -- the scenarios ----------------------------------------------------------------------------------------------
# The oracles are the shared ones: generation.check_rows_against_reference (every step against the no-cache
# reference), sliding.check_past_window / check_same_as_greedy (runs that go the whole length; tokens equal to
# plain greedy), decode.check_manual_loop (a hand-written loop through prepare_inputs_for_generation). Only beam
# search is written here.


@scenario("cached")
def cached(s: Subject) -> dict:
    rows = s.rows(9)
    run = generate_steps(s.model, *left_pad(rows), max_new_tokens=6, use_cache=True)
    return check_rows_against_reference(s.model, rows, run, "cached generate() vs no-cache forward")


@scenario("left-padded")
def left_padded(s: Subject) -> dict:
    rows = s.rows(7, 3, 10)
    run = generate_steps(s.model, *left_pad(rows), max_new_tokens=6)
    return check_rows_against_reference(s.model, rows, run, "left-padded batch vs each row alone")


@scenario("manual-loop")
def manual_loop(s: Subject) -> dict:
    """Greedy decoding by hand: ``prepare_inputs_for_generation`` given the full ids, the cache and the mask."""
    return decode.check_manual_loop(s.model)


@scenario("past-window")
def past_window(s: Subject) -> dict:
    if not s.sliding:
        raise ProbeSkipped("no sliding window in this architecture")
    return sliding.check_past_window(s.model, s.rows(12, 5), 3 * WINDOW, f"generation past a window of {WINDOW}")


@scenario("assisted")
def assisted(s: Subject) -> dict:
    (row,) = s.rows(2 * WINDOW if s.sliding else 8)
    return sliding.check_same_as_greedy(s.model, row, 2 * WINDOW, "assisted decoding, 5-token drafts",
                                        **sliding.drafting(s.draft, 5))


@scenario("prompt-lookup")
def prompt_lookup(s: Subject) -> dict:
    (head,) = s.rows(6)
    row = head * (3 if s.sliding else 2)  # repeated n-grams give the lookup something to propose
    return sliding.check_same_as_greedy(s.model, row, 2 * WINDOW, "prompt-lookup decoding",
                                        prompt_lookup_num_tokens=3)


@scenario("beam")
def beam(s: Subject) -> dict:
    import torch

    rows = s.rows(8)
    ids, mask = left_pad(rows)
    common = dict(num_beams=3, max_new_tokens=6, do_sample=False, attention_mask=mask, early_stopping=True)
    with torch.no_grad():
        cached_out = s.model.generate(ids, use_cache=True, **common)
        plain = s.model.generate(ids, use_cache=False, **common)
    a, b = cached_out[0, ids.shape[1]:].tolist(), plain[0, ids.shape[1]:].tolist()
    if a != b and not _tie(s.model, rows[0], a, b):
        raise DefectObserved(f"beam search: cached {a} != uncached {b}", step=_first_diff(a, b))
    return {"tokens": len(a)}


@scenario("chunked-prefill")
def chunked_prefill(s: Subject) -> dict:
    from transformers import GenerationConfig

    if not hasattr(GenerationConfig(), "prefill_chunk_size"):
        raise ProbeSkipped("generate() has no prefill_chunk_size on this release")
    return sliding.check_past_window(s.model, s.rows(2 * WINDOW + 3), 6, "chunked prefill (chunks of 5)",
                                     prefill_chunk_size=5)


@scenario("static-cache")
def static_cache(s: Subject) -> dict:
    return sliding.check_past_window(s.model, s.rows(10), 6, "static cache", cache_implementation="static")


def _first_diff(a: Sequence[int], b: Sequence[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _tie(model: Any, prompt: list[int], a: list[int], b: list[int], margin: float = 1e-3) -> bool:
    """Two continuations that part where the reference's top two logits are within ``margin`` (a numerical tie)."""
    step = _first_diff(a, b)
    if step >= min(len(a), len(b)):
        return False
    logits = reference_logits(model, prompt + a[:step])[-1]
    return abs(float(logits[a[step]]) - float(logits[b[step]])) < margin


# -- running ----------------------------------------------------------------------------------------------------
def _short(exc: BaseException, limit: int = 160) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return text[:limit]


def attempt(func: Scenario, subject: Subject) -> dict[str, Any]:
    """Run one scenario: {"outcome": pass|defect|crash|skipped, ...figures}."""
    import warnings

    start = time.perf_counter()
    name = next((k for k, v in SCENARIOS.items() if v is func), "")
    if name in _NEEDS_KV and not subject.kv_cache:
        return {"outcome": "skipped", "message": "no attention KV cache in this architecture", "seconds": 0.0}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            figures = func(subject)
    except DefectObserved as exc:
        out = {"outcome": "defect", "message": exc.message, **_json(exc.figures)}
    except ProbeSkipped as exc:
        out = {"outcome": "skipped", "message": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a crash is a finding unless the release says "not supported"
        message = f"{type(exc).__name__}: {_short(exc)}"
        if any(word in str(exc).lower() for word in _UNSUPPORTED):
            out = {"outcome": "skipped", "message": f"unsupported here: {message}"}
        else:
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            out = {"outcome": "crash", "message": f"{message} (at {frame.filename}:{frame.lineno})"}
    else:
        out = {"outcome": "pass", **_json(figures)}
    out["seconds"] = round(time.perf_counter() - start, 3)
    return out


def _json(figures: dict) -> dict:
    return {k: (float(v) if isinstance(v, float) else v) for k, v in figures.items()
            if isinstance(v, (int, float, str, bool)) or v is None}


def explain(registry: Any, func: Scenario, subject: Subject, tried_first: list[str] | None = None) -> dict[str, Any]:
    """Why a scenario failed: hf_genfix itself, a patch that is not installed, or nothing the catalog knows.

    ``tried_first`` (ids that explained earlier failures) is tried before the rest and updated in place.
    """
    from .._registry import INSTALLED

    statuses = {s.id: s for s in registry.status()}
    if any(s.state in INSTALLED for s in statuses.values()):
        with registry.disabled():
            if attempt(func, subject)["outcome"] == "pass":
                return {"explained_by": None, "cause": "hf_genfix: passes with every patch off (a regression "
                                                       "the patches introduce)"}
    order = list(tried_first or [])
    order += [pid for pid in statuses if pid not in order]
    for pid in order:
        status = statuses.get(pid)
        if status is None or status.state in INSTALLED or status.state in ("drift", "failed"):
            continue
        with registry.forced(pid):
            if attempt(func, subject)["outcome"] == "pass":
                if tried_first is not None and pid not in tried_first:
                    tried_first.insert(0, pid)
                note = "" if status.state != "not-needed" else (
                    f"; catalog wrong? its affected {status.affected!r} excludes this release")
                return {"explained_by": pid, "cause": f"fixed by {pid} (state {status.state}){note}",
                        "catalog_wrong": status.state == "not-needed"}
    return {"explained_by": None, "cause": "unknown"}


def run_sweep(registry: Any = None, archs: Iterable[str] | None = None, scenarios: Iterable[str] | None = None,
              budget_s: float | None = None) -> dict[str, Any]:
    import hf_genfix

    registry = registry or hf_genfix._default()
    start = time.perf_counter()
    names = list(scenarios or SCENARIOS)
    bad = [n for n in names if n not in SCENARIOS]
    if bad:
        raise SystemExit(f"hf-genfix doctor --sweep: unknown scenario(s) {bad}; known: {list(SCENARIOS)}")
    types = list(archs or decoder_only_types())
    results: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    unknown, explained, not_reached = [], [], []
    unusable: dict[str, str] = {}
    explainers: dict[str, list[str]] = {}
    for model_type in types:
        if budget_s is not None and time.perf_counter() - start > budget_s:
            not_reached.append(model_type)
            continue
        arch_start = time.perf_counter()
        try:
            subject = Subject(model_type)
        except ProbeSkipped as exc:
            skipped[model_type] = str(exc)
            continue
        except Exception as exc:  # noqa: BLE001
            skipped[model_type] = f"cannot build: {type(exc).__name__}: {_short(exc)}"
            continue
        per = {name: attempt(SCENARIOS[name], subject) for name in names}
        ran = [o for o in per.values() if o["outcome"] != "skipped"]
        messages = {o.get("message", "").split(" (at ")[0] for o in ran}
        if len(ran) > 1 and all(o["outcome"] == "crash" for o in ran) and len(messages) == 1:
            # Every scenario dies the same way: the tiny config does not suit this architecture (a hybrid with
            # no attention layer at 2 layers, a head size the defaults break), not one generation path.
            unusable[model_type] = ran[0]["message"]
            results[model_type] = {"seconds": round(time.perf_counter() - arch_start, 3), "scenarios": per}
            continue
        for name in names:
            func, out = SCENARIOS[name], per[name]
            if out["outcome"] in ("defect", "crash"):
                out.update(explain(registry, func, subject, explainers.setdefault(name, [])))
                finding = {"arch": model_type, "scenario": name, "kind": out["outcome"],
                           "step": out.get("step"), "row": out.get("row"),
                           "max_logit_diff": out.get("max_logit_diff"), "message": out["message"],
                           "cause": out["cause"], "explained_by": out["explained_by"],
                           "catalog_wrong": out.get("catalog_wrong", False)}
                (explained if out["explained_by"] else unknown).append(finding)
            per[name] = out
        results[model_type] = {"seconds": round(time.perf_counter() - arch_start, 3), "scenarios": per}
    return {
        "seconds": round(time.perf_counter() - start, 3),
        "scenarios": names,
        "architectures": results,
        "not_buildable": skipped,
        "unusable": unusable,
        "not_reached": not_reached,
        "unknown": unknown,
        "explained": explained,
    }


def failed(sweep: dict[str, Any]) -> bool:
    return bool(sweep["unknown"]) or any(f.get("catalog_wrong") for f in sweep["explained"])


def render_text(sweep: dict[str, Any]) -> str:
    archs = sweep["architectures"]
    ran = sum(1 for a in archs.values() for o in a["scenarios"].values() if o["outcome"] != "skipped")
    lines = [
        f"sweep: {len(archs)} architectures x {len(sweep['scenarios'])} scenarios ({ran} runs) in "
        f"{sweep['seconds']:.1f} s; {len(sweep['not_buildable'])} model types not buildable tiny"
        + (f"; {len(sweep['not_reached'])} not reached within the budget" if sweep["not_reached"] else "")
    ]
    for arch, message in sweep.get("unusable", {}).items():
        lines.append(f"  unusable tiny: {arch}: every scenario fails with {message}")
    for label, items in (("UNKNOWN DEFECT", sweep["unknown"]), ("explained", sweep["explained"])):
        for f in items:
            where = f"step {f['step']}" if f.get("step") is not None else "-"
            diff = f.get("max_logit_diff")
            diff_text = f", logit diff {diff:.3g}" if isinstance(diff, (int, float)) else ""
            lines.append(f"  {label}: {f['arch']} / {f['scenario']} ({f['kind']}, {where}{diff_text}): "
                         f"{f['message']} [{f['cause']}]")
    wrong = [f for f in sweep["explained"] if f.get("catalog_wrong")]
    lines.append(f"sweep: {'FAILED' if failed(sweep) else 'OK'}: {len(sweep['unknown'])} unknown defect(s), "
                 f"{len(sweep['explained'])} explained by the catalog"
                 + (f" ({len(wrong)} by a patch whose range excludes this release: catalog wrong)" if wrong else ""))
    return "\n".join(lines)
