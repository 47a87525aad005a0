"""The probes of ``sliding-window-gemma2-decode-mask`` and ``sliding-window-cohere2-decode-mask``: the defect, and how it
is detected, are in ``decode_mask.py``'s docstring.
"""

from __future__ import annotations


def _probe(name: str, logit_scale: float | None = None) -> dict:
    from transformers.cache_utils import DynamicCache

    from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad, tiny_model
    from hf_genfix.oracles.outcome import ProbeSkipped
    from hf_genfix.oracles.sliding import MODELS, WINDOW, prompts

    model_type, extra = MODELS[name]
    try:
        model = tiny_model(model_type, sliding_window=WINDOW, **extra)
    except ProbeSkipped:
        raise
    except Exception as exc:  # noqa: BLE001 - 5.4.0's Cohere2Config types use_cache as int and rejects any override
        raise ProbeSkipped(f"this release's {name} config refuses the tiny model: {type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''}") from exc
    if logit_scale is not None:
        # On the module, not the config: 5.4.0's Cohere2Config rejects any override (its use_cache is typed int).
        model.logit_scale = logit_scale
    rows = prompts(12, 5, seed=7)
    ids, mask = left_pad(rows)
    run = generate_steps(model, ids, mask, max_new_tokens=8, pad_token_id=0, eos_token_id=None)
    figures = check_rows_against_reference(model, rows, run, f"{name}, sliding_window=8, rows of 12 and 5 tokens "
                                           "left-padded, 8 greedy tokens (hybrid cache)", eos_token_id=[])
    rows = prompts(5, seed=8)
    ids, mask = left_pad(rows)
    try:
        run = generate_steps(model, ids, mask, max_new_tokens=12, pad_token_id=0, eos_token_id=None,
                             past_key_values=DynamicCache(), cache_implementation=None)
    except RuntimeError as exc:
        if "must match the size" not in str(exc):
            raise
        return figures  # 4.48.2+ slices the mask for a hybrid cache whatever the cache: loud, not this defect
    dynamic = check_rows_against_reference(model, rows, run, f"{name}, sliding_window=8, a 5-token prompt, 12 greedy "
                                           "tokens on a dynamic cache", eos_token_id=[])
    return dict(figures, max_logit_diff=max(figures["max_logit_diff"], dynamic["max_logit_diff"]))


def probe_gemma2() -> dict:
    return _probe("gemma2")


def probe_cohere2() -> dict:
    # Cohere-2 scales its logits by 1/16 by default: at scale 1 the defect reads as it is (0.0149 -> 0.24).
    return _probe("cohere2", logit_scale=1.0)


def ring_check(name: str, logit_scale: float | None = None) -> dict:
    """The ``SlidingWindowCache`` part (decode_mask.py's third bullet): a one-layer tiny model (its one layer
    slides, so ``cache_implementation="sliding_window"`` keeps the ring), rows of 7, 3 and 10 tokens left-padded, 6
    greedy tokens: every row and step against a no-cache forward of the unpadded row. Raises ``DefectObserved``
    where the padded rows read the wrong columns."""
    from hf_genfix.oracles import check_rows_against_reference, generate_steps, left_pad, tiny_model
    from hf_genfix.oracles.sliding import MODELS, WINDOW, prompts

    model_type, extra = MODELS[name]
    model = tiny_model(model_type, sliding_window=WINDOW,
                       **{**extra, "num_hidden_layers": 1, "layer_types": extra["layer_types"][:1]})
    if logit_scale is not None:
        model.logit_scale = logit_scale
    rows = prompts(7, 3, 10, seed=16)
    ids, mask = left_pad(rows)
    run = generate_steps(model, ids, mask, max_new_tokens=6, cache_implementation="sliding_window", pad_token_id=0,
                         eos_token_id=None)
    return check_rows_against_reference(model, rows, run, f"{name}, one sliding layer, rows of 7, 3 and 10 tokens "
                                        "left-padded, cache_implementation='sliding_window'", eos_token_id=[])
