"""Sweep scenarios for continuations of a cache (issue 36 §3), on every decoder-only kind, recurrent and hybrid
state-space models included. Each is an equivalence that holds by definition, judged step by step against the
project's oracle (a no-cache forward of each whole unpadded row, ``generation.check_rows_against_reference``):

- ``second-turn``: ``generate(out.sequences + next turn, past_key_values=out.past_key_values)`` after a first
  ``generate(..., return_dict_in_generate=True)`` ≡ the whole conversation without a cache;
- ``prefix-reuse``: the shared prefix prefilled once, ``model(prefix, past_key_values=DynamicCache(...))``, then
  ``generate(prefix + continuation, past_key_values=copy.deepcopy(cache))`` for two continuations (transformers'
  documented prefix caching) ≡ no cache;
- ``own-cache``: the same with the model's own cache argument where its forward has one (``cache_params``);
- ``beam-loud``: beam search with the cache ≡ without it (both reorder, only one has a cache to reorder).

Each runs on one row and, where the model takes padding, on a left-padded batch of three. The models are the
sweep's, made *loud* (``loud()``): their matrices scaled to a std of 0.3 (transformers' 0.02 makes a lost SSM state
a 1e-3 difference, indistinguishable from rounding; at 0.3 the same defect is 0.2-8 while a correct continuation
stays within 1e-5) with the SSM chunk and conv sizes of ``LOUD`` (chunks shorter than the prompt). A chunk after a
cache, ``prefill_chunk_size`` and a plain cached generate() are the sweep's ``chunk-after-cache``,
``chunked-prefill`` and ``cached``/``uncached`` scenarios.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

from ..generation import check_rows_against_reference, generate_steps, left_pad
from ..outcome import DefectObserved, ProbeSkipped, earlier_stage
from ..tiny import tiny_config
from .core import Subject, build, finite_beams, scenario

STD = 0.3  # the loud models' weight std: see the module docstring
# Config knobs that gate code paths, set where the tiny config has them: chunks and conv windows shorter than the
# prompts (10 tokens), small states.
LOUD = {"chunk_size": 4, "mamba_chunk_size": 4, "state_size": 8, "conv_kernel": 4}
NEW = 4  # tokens generated per turn


def loud(s: Subject, trained_norms: bool = False) -> Any:
    """The subject's model, rebuilt with its seed and ``LOUD``'s knobs and its matrices scaled to ``STD`` (once
    per subject); ``trained_norms``: its norm scales drawn too (``_trained_norm_scales``)."""
    attribute = "_loud_normed" if trained_norms else "_loud"
    model = getattr(s, attribute, None)
    if model is None:
        model = loud_model(s.model_type, trained_norms=trained_norms, **s.overrides)
        setattr(s, attribute, model)
    return model


def loud_model(model_type: str, trained_norms: bool = False, **overrides: Any) -> Any:
    import torch

    config = tiny_config(model_type, **overrides)
    knobs = {k: v for k, v in LOUD.items() if isinstance(getattr(config, k, None), int) and getattr(config, k) > v}
    if isinstance(getattr(config, "initializer_range", None), float):
        knobs["initializer_range"] = STD  # the init's own std where it reads it (SSM projections included)
    try:
        model = build(model_type, seed=0, **dict(overrides, **knobs))
    except Exception:  # noqa: BLE001 - a knob the config refuses: the sweep's sizes
        model = build(model_type, seed=0, **overrides)
    with torch.no_grad():
        for name, p in model.named_parameters():
            # Matrices only (not norms, biases, SSM dynamics): the logits' scale, not their kind, changes.
            # Every matrix at STD, whatever build() left: the sweep's own calibration (tiny.calibrate, std
            # 1/sqrt(fan_in), embeddings 1) is tamer than this, and a continuation defect measured at STD (Mamba's
            # second turn: 0.57 on 5.24) fell to 6.7e-4 under it.
            if p.dim() == 2 and min(p.shape) > 1 and "norm" not in name:
                std = float(p.std())
                if std > 0:
                    p.mul_(STD / std)
        if trained_norms:
            _trained_norm_scales(model)
    _runs_upstream(model, model_type)
    return model


NORM_SPREAD = 0.3  # the spread of a norm's scales around their neutral value


def _trained_norm_scales(model: Any) -> None:
    """Every normalisation's scale vector drawn around its neutral value (1, or 0 where the norm multiplies by
    ``1 + weight``: Gemma, RecurrentGemma, whose weights initialise to zeros from 4.57 on) with spread
    ``NORM_SPREAD``, as a trained model's are, instead of all neutral. With neutral scales a tiny model can keep
    its beams in their order, so a state never reordered with the beams shows nothing: RecurrentGemma's beam search
    with a cache (decoding-beam-recurrent-gemma) passes the sweep on 4.57+ with zeros and fails with drawn scales,
    as it does on 4.49-4.56, whose init was 1 + 1. Its own generator: the model's other weights are not redrawn.
    Used by ``beam-loud`` only: on the continuations the drawn scales grew float32 rounding to the oracle's
    tolerance (Zamba's second turn with model-zamba-chunk-state: 1.0e-04 on 4.46.3, 9.3e-05 on 4.57-5.12, from
    6.9e-05), where only the beams' order needed them."""
    import torch

    generator = torch.Generator().manual_seed(1234)
    for module in model.modules():
        if "norm" not in type(module).__name__.lower():
            continue
        weight = getattr(module, "weight", None)
        if not isinstance(weight, torch.nn.Parameter) or weight.dim() != 1 or weight.numel() < 2:
            continue
        neutral = 0.0 if not bool(weight.detach().abs().gt(0).any()) else 1.0
        draw = torch.randn(weight.shape, generator=generator, dtype=torch.float32) * NORM_SPREAD + neutral
        weight.copy_(draw.to(device=weight.device, dtype=weight.dtype))


def _runs_upstream(model: Any, model_type: str) -> None:
    """A tiny model upstream itself cannot run (Zamba2 on 5.0-5.2: its forward calls a ``rotary_emb`` that the
    model never builds without ``use_mem_rope``) is a loud failure, not a silently wrong path: skipped, named. The
    smoke forward runs with every patch off, so a failure of ours is never taken for upstream's."""
    import torch

    import hf_genfix

    ids = torch.tensor([[17, 44, 91, 23]])
    try:
        with hf_genfix.disabled(), torch.no_grad():
            model(input_ids=ids, use_cache=False)
    except Exception as exc:  # noqa: BLE001 - whatever upstream raises, named in the skip
        import transformers

        raise ProbeSkipped(f"upstream cannot run the tiny {model_type} on transformers {transformers.__version__} "
                           f"(a loud failure, not a silent one): {type(exc).__name__}: {exc}") from exc


def _batches(s: Subject, seed: int) -> list[list[list[int]]]:
    """One row, and a left-padded batch of three where the model takes padding."""
    single = s.rows(10, seed=seed)
    return [single] if s.lacks(("padding",)) else [single, s.rows(10, 6, 8, seed=seed + 1)]


def _grow(mask: Any, width: int) -> Any:
    """The mask of the prompt, extended with ones to ``width`` columns."""
    import torch

    return torch.cat([mask, mask.new_ones((mask.shape[0], width - mask.shape[1]))], dim=1)


def _forward_cache(out: Any) -> Any:
    from ...helpers.decode import cache_from_outputs

    cache = cache_from_outputs(out)
    return cache if cache is not None else getattr(out, "cache_params", None)


def _generated_cache(out: Any) -> Any:
    for name in ("past_key_values", "cache"):
        cache = getattr(out, name, None)
        if cache is not None:
            return cache
    return None


def second_turn(model: Any, rows: list[list[int]], turn: list[int]) -> dict:
    """generate() a first turn, then continue from its returned cache with ``turn`` appended to each row."""
    import torch

    ids, mask = left_pad(rows)
    stop = dict(pad_token_id=0, eos_token_id=None, min_new_tokens=NEW)
    first = generate_steps(model, ids, mask, max_new_tokens=NEW, **stop)
    with torch.no_grad():  # the same call again for its cache: GenRun keeps only sequences and logits
        out = model.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=NEW,
                             return_dict_in_generate=True, **stop)
    cache = _generated_cache(out)
    if cache is None:
        raise ProbeSkipped("generate() returns no cache on this model (return_dict_in_generate=True)")
    ids2 = torch.cat([out.sequences, torch.tensor([turn] * len(rows), device=ids.device)], dim=1)
    mask2 = _grow(mask, ids2.shape[1])
    params = inspect.signature(model.forward).parameters
    keyword = "past_key_values" if ("past_key_values" in params or "cache" in params) else "cache_params"
    second = generate_steps(model, ids2, mask2, max_new_tokens=NEW, **{keyword: cache}, **stop)
    so_far = [list(r) + first.new_tokens(b) + list(turn) for b, r in enumerate(rows)]
    return check_rows_against_reference(model, so_far, second, "second turn continuing from out.past_key_values",
                                        eos_token_id=[])


def prefix_reuse(model: Any, rows: list[list[int]], continuations: list[list[int]], own: bool = False) -> dict:
    """The prefix prefilled once into a cache, then one generate() per continuation from a deepcopy of it
    (``own``: the model's own cache argument, ``cache_params``, from a plain forward)."""
    import torch

    ids, mask = left_pad(rows)
    params = inspect.signature(model.forward).parameters
    # The prefix's positions skip its pads, as generate()'s do for the continuation.
    extra = {"position_ids": (mask.cumsum(-1) - 1).clamp(min=0)} if "position_ids" in params else {}
    with torch.no_grad():
        if own:
            cache = _forward_cache(model(ids, attention_mask=mask, use_cache=True))
            keyword = "cache_params"
        elif "past_key_values" not in params and "cache" not in params:
            # A model that takes its cache as cache_params only (the state-space models before 5.13: generate()
            # refuses past_key_values there): the prefix's cache is the one its forward returns, reused by that name.
            cache = _forward_cache(model(ids, attention_mask=mask, use_cache=True))
            keyword = "cache_params"
        else:
            cache = _empty_cache(model)
            keyword = "past_key_values"
            given = cache
            out = model(ids, attention_mask=mask, past_key_values=cache, use_cache=True, **extra)
            made = _forward_cache(out)
            cache = made if made is not None and made is not given else cache  # a model that keeps its own
    if cache is None:
        raise ProbeSkipped("the forward returns no cache")
    figures: dict[str, Any] = {"max_logit_diff": 0.0, "steps_compared": 0}
    for cont in continuations:
        ids2 = torch.cat([ids, torch.tensor([cont] * len(rows), device=ids.device)], dim=1)
        run = generate_steps(model, ids2, _grow(mask, ids2.shape[1]), max_new_tokens=NEW,
                             **{keyword: copy.deepcopy(cache)}, pad_token_id=0, eos_token_id=None,
                             min_new_tokens=NEW)
        got = check_rows_against_reference(model, [list(r) + list(cont) for r in rows], run,
                                           f"prefix cache reused ({keyword}=deepcopy(cache))", eos_token_id=[])
        figures["max_logit_diff"] = max(figures["max_logit_diff"], got["max_logit_diff"])
        figures["steps_compared"] += got["steps_compared"]
    return figures


def _empty_cache(model: Any) -> Any:
    """``DynamicCache(config=model.config)`` as 5.x documents it (it builds the layers the model needs: sliding,
    recurrent); ``DynamicCache()`` where the release takes no config."""
    from transformers.cache_utils import DynamicCache

    try:
        return DynamicCache(config=model.config)
    except TypeError:
        return DynamicCache()


def _merge(results: list[dict]) -> dict:
    return {"max_logit_diff": max(r["max_logit_diff"] for r in results),
            "steps_compared": sum(r["steps_compared"] for r in results)}


def _each_batch(batches: list[list[list[int]]], run: Any) -> dict:
    """``run(rows)`` on the one row, then on the padded batch. A wrong row ends the scenario; only the sweep's
    attribution of a crash in the batch runs upstream past it (``earlier_stage``): 5.25.0's Mamba is wrong on the
    row (1.46) and, once past it, raises in the batch with or without hf_genfix (it slices the ids of a second turn
    to the new tokens and hands the mixer the mask of the whole conversation)."""
    results = []
    for i, rows in enumerate(batches):
        if i < len(batches) - 1:
            with earlier_stage():
                results.append(run(rows))
        else:
            results.append(run(rows))
    return _merge(results)


@scenario("second-turn")
def second_turn_scenario(s: Subject) -> dict:
    model = loud(s)
    (turn,) = s.rows(3, seed=5)
    return _each_batch(_batches(s, seed=31), lambda rows: second_turn(model, rows, turn))


@scenario("prefix-reuse")
def prefix_reuse_scenario(s: Subject) -> dict:
    model = loud(s)
    continuations = s.rows(3, 4, seed=11)
    return _each_batch(_batches(s, seed=41), lambda rows: prefix_reuse(model, rows, continuations))


@scenario("own-cache")
def own_cache_scenario(s: Subject) -> dict:
    if "cache_params" not in inspect.signature(s.model.forward).parameters:
        raise ProbeSkipped("the model's forward has no cache argument of its own (cache_params)")
    model = loud(s)
    continuations = s.rows(3, 4, seed=11)
    return _each_batch(_batches(s, seed=41), lambda rows: prefix_reuse(model, rows, continuations, own=True))


@scenario("causal-prefix", record_forward=True)
def causal_prefix(s: Subject) -> dict:
    """A decoder's no-cache forward is causal, by definition: the logits of a forward of a row's first n tokens ≡ the
    first n positions of a forward of the whole row (14 tokens; n = 3, 5, 9, 13), on the loud model, whose SSM chunks
    of 4 are shorter than the row. Every other scenario takes a no-cache forward as its oracle; this one checks the
    oracle itself. A scan that carries its state between chunks wrongly (Zamba2 4.49-5.14, NemotronH 5.3-5.14,
    Mamba-2 before 4.48: 0.2-1.2 on the loud models) gives each prefix another answer, and the generate() scenarios
    compare against a reference that shares the defect (NemotronH's cached generate() was 0.0532 off such a
    reference, read as a decoding defect for two sessions)."""
    import torch

    from ..precision import tolerance
    from ..reference import max_diff

    model = loud(s)
    (row,) = s.rows(14, seed=61)
    ids = torch.tensor([row], device=model.device)
    worst = 0.0
    with torch.no_grad():
        whole = model(input_ids=ids, use_cache=False).logits
        for n in (3, 5, 9, 13):
            part = model(input_ids=ids[:, :n], use_cache=False).logits
            diff = max_diff(part, whole[:, :n])
            worst = max(worst, diff)
            if not diff <= tolerance():
                raise DefectObserved(f"a no-cache forward of the first {n} of 14 tokens differs from those positions "
                                     f"of the whole row's forward by {diff:.3g} (not causal)",
                                     max_logit_diff=diff, step=0)
    return {"max_logit_diff": worst, "steps_compared": 4}


@scenario("beam-loud", needs=("reorder",))
def beam_loud(s: Subject) -> dict:
    """Beam search (3 beams, 6 new tokens) with the cache ≡ without it, on the loud model: a left-padded batch of
    three (one row where the model takes no padding). Beam search reorders the cache after every step; a state it fails to reorder (a layer kind
    the cache class keeps beside its keys and values) feeds each beam another beam's past. The sweep's ``beam``
    runs the tame model, where such a state moves the scores by rounding's order and the beams rarely change."""
    # the padded batch where the model takes one
    return beam_equivalence(loud(s, trained_norms=True), _batches(s, seed=51)[-1:])


def beam_equivalence(model: Any, batches: list[list[list[int]]], beams: int = 3, new: int = 6) -> dict:
    """Every row of every batch: the same tokens with ``use_cache=True`` as with ``use_cache=False``."""
    import torch

    from ..outcome import DefectObserved

    compared = 0
    for rows in batches:
        ids, mask = left_pad(rows)
        ids, mask = ids.to(model.device), mask.to(model.device)
        common = dict(num_beams=beams, max_new_tokens=new, do_sample=False, early_stopping=True, pad_token_id=0,
                      eos_token_id=None)
        if len(rows) > 1:  # one row needs no mask (4.44's Mamba refuses one)
            common["attention_mask"] = mask
        with torch.no_grad():
            cached_out = model.generate(ids, use_cache=True, **common)
            plain_out = model.generate(ids, use_cache=False, **common)
        finite_beams(model, ids, common.get("attention_mask"), {"cached": cached_out, "uncached": plain_out})
        cached = cached_out[:, ids.shape[1]:].tolist()
        plain = plain_out[:, ids.shape[1]:].tolist()
        for b, (a, c) in enumerate(zip(cached, plain)):
            if a != c:
                step = next(t for t, (x, y) in enumerate(zip(a, c)) if x != y)
                raise DefectObserved(f"beam search ({beams} beams), row {b} of {len(rows)}: cached {a} != uncached "
                                     f"{c}", row=b, step=step)
            compared += 1
    return {"rows_compared": compared, "tokens": new}


def probe_second_turn(model_type: str, **overrides: Any) -> dict:
    """The continuation patches' probe: a loud tiny ``model_type``, a first turn generated, then a second turn of
    three more tokens continuing from the returned cache, every step against the no-cache reference."""
    model = loud_model(model_type, **overrides)
    import torch

    gen = torch.Generator().manual_seed(31)
    row = torch.randint(3, 128, (10,), generator=gen).tolist()
    turn = torch.randint(3, 128, (3,), generator=gen).tolist()
    return unless_upstream_fails(second_turn, model, [row], turn)


def unless_upstream_fails(call: Any, *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)``, for a probe: an exception that upstream raises too, the same call with every patch
    off failing with the same exception type, is a loud failure and no silent defect to observe (``ProbeSkipped``:
    RecurrentGemma before 5.4, whose cached generate() raises on 4.46-4.48 and refuses a second turn's cache from
    4.49; OlmoHybrid on 5.14.0, whose cache lacks get_query_offset). Any other exception is ours, raised as is."""
    try:
        return call(*args, **kwargs)
    except (DefectObserved, ProbeSkipped):
        raise
    except Exception as exc:  # noqa: BLE001 - judged below: a refusal, upstream's own crash, or ours
        # Before 5.17 model-mamba-state-chunk (and its Falcon-Mamba copy) refuse this call: the continuation is
        # wrong there by older code that this probe's patch does not touch, and the refusal is that release's answer.
        if type(exc).__name__ == "MambaStateChunkUnsupported":
            raise ProbeSkipped(f"hf_genfix refuses this continuation on this release: {str(exc)[:120]}") from exc
        import hf_genfix

        try:
            with hf_genfix.disabled():
                call(*args, **kwargs)
        except Exception as upstream:  # noqa: BLE001 - compared with ours
            if type(upstream) is type(exc):
                raise ProbeSkipped(f"upstream fails this call itself (a loud failure, not a silent one): "
                                   f"{type(exc).__name__}: {str(exc)[:120]}") from exc
        raise
