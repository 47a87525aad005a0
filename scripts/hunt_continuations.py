"""Hunt for silently wrong continuations of a cache (issue 36 §3), every text model type a tiny config builds.

For each decoder-only model type of the installed transformers, built tiny and *loud* (weights drawn with a large
std, windows shorter than the prompt, SSM chunks of 4 and small states), each equivalence below is judged against
the project's oracle, a no-cache forward of the whole unpadded row, by max |logit diff| and by the greedy tokens:

  uncached      generate(use_cache=False)                               (the rounding floor of the harness)
  cached        plain generate()
  second-turn   generate(out1.sequences + turn 2, past_key_values=out1.past_key_values)
  own-cache     the same with the model's own cache argument (cache_params) where it has one
  prefix-reuse  model(prefix, past_key_values=DynamicCache(..)) then generate(prefix + c, past_key_values=deepcopy)
  chunk         model(prefix, use_cache=True) then model(chunk, past_key_values=cache, cache_position=...)
  prefill-chunk generate(prefill_chunk_size=4)

each on one row ("b1") and on a left-padded batch of three ("pad"). Usage:

  HF_GENFIX=off python scripts/hunt_continuations.py [--types a,b] [--json out.json]

(HF_GENFIX=off: upstream; without it, with hf_genfix's patches.) Prints one line per type and equivalence.
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import signal
import sys
import time
import traceback
import warnings

warnings.filterwarnings("ignore")

import hf_genfix  # noqa: E402,F401 - installs the patches unless HF_GENFIX=off
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

hf_logging.set_verbosity_error()

from hf_genfix.helpers.decode import cache_from_outputs  # noqa: E402
from hf_genfix.oracles import sweep  # noqa: E402
from hf_genfix.oracles.generation import generate_cache_keyword, left_pad  # noqa: E402
from hf_genfix.oracles.outcome import ProbeSkipped  # noqa: E402
from hf_genfix.oracles.reference import reference_logits  # noqa: E402
from hf_genfix.oracles.tiny import tiny_config  # noqa: E402

STD = 0.3  # weight std of the loud models (transformers' default 0.02 makes a defect a 1e-3 difference)
NEW = 4  # tokens generated per turn
LOUD = {  # config knobs that gate code paths, set where the config has them
    "sliding_window": 4, "chunk_size": 4, "mamba_chunk_size": 4, "state_size": 8, "mamba_d_state": 8,
    "ssm_state_size": 8, "attention_window_size": 4, "conv_kernel": 4, "use_mamba_kernels": False,
}
# Per type: what the tiny text sizes need on top (Mamba-2: heads x head size = expand x hidden).
# Per type: what the tiny text sizes need on top of oracles/tiny.py's (Bamba, GraniteMoeHybrid: Mamba-2 heads of 8).
_M2 = dict(mamba_n_heads=8, mamba_d_head=8, mamba_expand=2, mamba_d_state=8, mamba_chunk_size=4, mamba_n_groups=1)
PER_TYPE = {"bamba": _M2, "granitemoehybrid": _M2}


def loud_overrides(model_type: str) -> dict:
    base = PER_TYPE.get(model_type, {})
    config = tiny_config(model_type, **base)
    try:
        out = dict(sweep.core._sliding_overrides(model_type), **sweep.core._ssm_overrides(model_type), **base)
    except Exception:  # noqa: BLE001 - the default config itself fails validation: the per-type sizes alone
        out = dict(base)
    for k, v in LOUD.items():
        if isinstance(getattr(config, k, None), (bool, int)) and (k != "sliding_window" or k in out):
            out[k] = v
    if "sliding_window" in out and hasattr(config, "use_sliding_window"):
        out.update(use_sliding_window=True, max_window_layers=1)
    if "initializer_range" in vars(config) or hasattr(config, "initializer_range"):
        out["initializer_range"] = STD
    return out


def build(model_type: str):
    try:
        over = loud_overrides(model_type)
        model = sweep.build(model_type, seed=0, **over)
    except Exception:  # noqa: BLE001 - a loud knob the config refuses: the sweep's own tiny model
        over = dict(sweep.core._sliding_overrides(model_type), **sweep.core._ssm_overrides(model_type))
        model = sweep.build(model_type, seed=0, **over)
    # Where the init ignored initializer_range, scale the matrices (not norms, biases or SSM dynamics) to STD.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2 and p.shape[0] > 1 and p.shape[1] > 1 and "norm" not in name:
                std = float(p.std())
                if 0 < std < STD / 3:
                    p.mul_(STD / std)
    return model.eval(), over


def row_refs(model, rows):
    return [reference_logits(model, r) for r in rows]


def judge(model, rows, new_tokens, step_logits, first_step_pos=None):
    """(max |logit diff|, token mismatches) of generate()'s steps against the reference of each full row."""
    worst, bad = 0.0, 0
    for b, prompt in enumerate(rows):
        new = new_tokens[b]
        ref = reference_logits(model, list(prompt) + new)
        for t in range(len(new)):
            exp = ref[len(prompt) - 1 + t]
            act = step_logits[t][b].float()
            worst = max(worst, float((act - exp).abs().max()))
            if int(exp.argmax()) != new[t]:
                bad += 1
    return worst, bad


def gen(model, ids, mask, **kw):
    args = dict(do_sample=False, max_new_tokens=NEW, return_dict_in_generate=True, output_logits=True,
                pad_token_id=0, eos_token_id=None, min_new_tokens=NEW)
    args.update(kw)
    if "past_key_values" in args:
        args[generate_cache_keyword(model)] = args.pop("past_key_values")
    with torch.no_grad():
        out = model.generate(ids, attention_mask=mask, **args)
    return out


def news(out, width):
    return [out.sequences[b, width:].tolist() for b in range(out.sequences.shape[0])]


def rows_for(vocab, *lengths, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, vocab, (n,), generator=g).tolist() for n in lengths]


def out_cache(out):
    for k in ("past_key_values", "cache"):
        c = getattr(out, k, None)
        if c is not None:
            return c
    return None


def empty_cache(model):
    from transformers import DynamicCache

    try:
        return DynamicCache(config=model.config)
    except TypeError:
        return DynamicCache()


# -- the equivalences --------------------------------------------------------------------------------------------
def e_uncached(model, rows):
    ids, mask = left_pad(rows)
    out = gen(model, ids, mask, use_cache=False)
    return judge(model, rows, news(out, ids.shape[1]), out.logits)


def e_cached(model, rows):
    ids, mask = left_pad(rows)
    out = gen(model, ids, mask)
    return judge(model, rows, news(out, ids.shape[1]), out.logits)


def e_second_turn(model, rows):
    ids, mask = left_pad(rows)
    out = gen(model, ids, mask)
    cache = out_cache(out)
    if cache is None:
        raise ProbeSkipped("generate returned no past_key_values")
    params = inspect.signature(model.forward).parameters
    takes_pkv = "past_key_values" in params or "cache" in params
    kw = {"past_key_values" if takes_pkv else "cache_params": cache}
    turn2 = rows_for(128 if model.config.vocab_size >= 128 else model.config.vocab_size, 3, seed=5)[0]
    t2 = torch.tensor([turn2] * len(rows))
    ids2 = torch.cat([out.sequences, t2], 1)
    mask2 = torch.cat([mask, torch.ones(len(rows), ids2.shape[1] - mask.shape[1], dtype=mask.dtype)], 1)
    out2 = gen(model, ids2, mask2, **kw)
    full = [list(r) + news(out, ids.shape[1])[b] + turn2 for b, r in enumerate(rows)]
    return judge(model, full, news(out2, ids2.shape[1]), out2.logits)


def e_own_cache(model, rows):
    """The model's own cache argument: model(prefix, use_cache=True).cache_params, then
    generate(prefix + continuation, cache_params=deepcopy(it))."""
    if "cache_params" not in inspect.signature(model.forward).parameters:
        raise ProbeSkipped("no cache_params")
    ids, mask = left_pad(rows)
    with torch.no_grad():
        fwd = model(ids, attention_mask=mask, use_cache=True)
    cache = getattr(fwd, "cache_params", None)
    if cache is None:
        raise ProbeSkipped("forward returned no cache_params")
    cont = rows_for(min(model.config.vocab_size, 128), 3, seed=11)[0]
    ids2 = torch.cat([ids, torch.tensor([cont] * len(rows))], 1)
    mask2 = torch.cat([mask, torch.ones(len(rows), 3, dtype=mask.dtype)], 1)
    out = gen(model, ids2, mask2, cache_params=copy.deepcopy(cache))
    return judge(model, [list(r) + cont for r in rows], news(out, ids2.shape[1]), out.logits)


def e_prefix_reuse(model, rows):
    ids, mask = left_pad(rows)
    cache = empty_cache(model)
    # The prefix's positions must skip its pads, as generate()'s will for the continuation.
    takes_pos = "position_ids" in inspect.signature(model.forward).parameters
    kw = {"position_ids": (mask.cumsum(-1) - 1).clamp(min=0)} if takes_pos else {}
    with torch.no_grad():
        fwd = model(ids, attention_mask=mask, past_key_values=cache, use_cache=True, **kw)
    got = cache_from_outputs(fwd)
    if got is not None and got is not cache:  # a model that made its own cache (SSM): reuse that one
        cache = got
    worst, bad = 0.0, 0
    for seed in (11, 12):
        cont = rows_for(min(model.config.vocab_size, 128), 3, seed=seed)[0]
        ids2 = torch.cat([ids, torch.tensor([cont] * len(rows))], 1)
        mask2 = torch.cat([mask, torch.ones(len(rows), 3, dtype=mask.dtype)], 1)
        out = gen(model, ids2, mask2, past_key_values=copy.deepcopy(cache))
        w, b = judge(model, [list(r) + cont for r in rows], news(out, ids2.shape[1]), out.logits)
        worst, bad = max(worst, w), bad + b
    return worst, bad


def e_chunk(model, rows):
    ids, mask = left_pad(rows)
    width = ids.shape[1]
    chunk = rows_for(min(model.config.vocab_size, 128), 5, seed=21)[0]
    c = torch.tensor([chunk] * len(rows))
    mask2 = torch.cat([mask, torch.ones(len(rows), 5, dtype=mask.dtype)], 1)
    takes_pos = "position_ids" in inspect.signature(model.forward).parameters
    pos = (mask2.cumsum(-1) - 1).clamp(min=0)
    kw1 = {"position_ids": pos[:, :width]} if takes_pos else {}
    kw2 = {"position_ids": pos[:, width:]} if takes_pos else {}
    with torch.no_grad():
        first = model(ids, attention_mask=mask, use_cache=True, **kw1)
        cache = cache_from_outputs(first)
        params = inspect.signature(model.forward).parameters
        if cache is None and hasattr(first, "cache_params"):
            extra = {"cache_params": first.cache_params}
        else:  # 5.24 names it cache (past_key_values would land in **kwargs, unused)
            extra = {"cache" if "cache" in params else "past_key_values": cache}
        if "cache_position" in inspect.signature(model.forward).parameters:
            extra["cache_position"] = torch.arange(width, width + 5)
        # A recurrent model's mask covers the new tokens only (its state holds the rest).
        recurrent = "cache_params" in extra or getattr(cache, "is_linear", None) and all(cache.is_linear)
        chunk_mask = mask2[:, width:] if recurrent else mask2
        logits = model(c, attention_mask=chunk_mask, use_cache=True, **extra, **kw2).logits
    worst, bad = 0.0, 0
    for b, r in enumerate(rows):
        ref = reference_logits(model, list(r) + chunk)[len(r):]
        worst = max(worst, float((logits[b].float() - ref).abs().max()))
        bad += int((logits[b].argmax(-1) != ref.argmax(-1)).sum())
    return worst, bad


def e_prefill_chunk(model, rows):
    from transformers import GenerationConfig

    if not hasattr(GenerationConfig(), "prefill_chunk_size"):
        raise ProbeSkipped("no prefill_chunk_size")
    ids, mask = left_pad(rows)
    out = gen(model, ids, mask, prefill_chunk_size=4)
    return judge(model, rows, news(out, ids.shape[1]), out.logits)


EQUIVALENCES = {"uncached": e_uncached, "cached": e_cached, "second-turn": e_second_turn,
                "own-cache": e_own_cache, "prefix-reuse": e_prefix_reuse, "chunk": e_chunk,
                "prefill-chunk": e_prefill_chunk}


# Recurrent / hybrid state-space models first, then sliding-window and MoE ones, then the rest (a run under load
# may be cut short: the kinds most likely wrong come first).
FIRST = ("mamba", "mamba2", "falcon_mamba", "jamba", "bamba", "falcon_h1", "zamba", "zamba2", "granitemoehybrid",
         "nemotron_h", "recurrent_gemma", "rwkv", "lfm2", "lfm2_moe", "qwen3_next", "minimax", "kimi_linear",
         "olmo_hybrid", "qwen3_5_text", "xlstm", "bailing_hybrid", "lfm3", "mistral", "qwen2", "gemma2",
         "gemma3_text", "cohere2", "phi3", "starcoder2", "gpt_neo", "gpt_oss", "mixtral", "qwen2_moe", "phimoe",
         "qwen3_moe", "olmoe", "granitemoe", "dbrx", "deepseek_v3", "llama", "gpt2", "gemma4_text", "exaone4",
         "ministral", "smollm3", "seed_oss", "qwen3")


def prioritised(types):
    return [t for t in FIRST if t in types] + [t for t in types if t not in FIRST]


class Timeout(Exception):
    pass


def _alarm(*_):
    raise Timeout()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--types", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--eq", default="")
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--limit", type=int, default=90, help="seconds per model type")
    a = ap.parse_args()
    types = a.types.split(",") if a.types else prioritised(sweep.decoder_only_types())
    eqs = a.eq.split(",") if a.eq else list(EQUIVALENCES)
    results = {"transformers": transformers.__version__, "types": {}}
    signal.signal(signal.SIGALRM, _alarm)
    for t in types:
        entry = results["types"][t] = {}
        started = time.time()
        signal.alarm(a.limit)
        try:
            try:
                model, over = build(t)
            except Exception as exc:  # noqa: BLE001
                entry["build"] = f"{type(exc).__name__}: {str(exc)[:100]}"
                print(f"{t:24s} not built: {entry['build']}", flush=True)
                continue
            vocab = min(model.config.vocab_size, 128)
            b1 = rows_for(vocab, 10, seed=1)
            pad = rows_for(vocab, 10, 6, 8, seed=2)
            for name in eqs:
                for label, rows in (("b1", b1), ("pad", pad)):
                    key = f"{name}/{label}"
                    try:
                        w, bad = EQUIVALENCES[name](model, rows)
                        entry[key] = [w, bad]
                        print(f"{t:24s} {key:20s} {w:10.3g} tokens-off {bad}", flush=True)
                    except ProbeSkipped as exc:
                        entry[key] = f"skip: {exc}"
                        break
                    except Timeout:
                        raise
                    except Exception as exc:  # noqa: BLE001
                        entry[key] = f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
                        print(f"{t:24s} {key:20s} {entry[key]}", flush=True)
                        if "-v" in sys.argv:
                            traceback.print_exc()
        except Timeout:
            entry["timeout"] = a.limit
            print(f"{t:24s} timeout after {a.limit}s", flush=True)
        finally:
            signal.alarm(0)
            entry["seconds"] = round(time.time() - started, 1)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
