"""The probes of ``sliding-window-full-cache-phimoe``, ``sliding-window-full-cache-qwen2-moe``: the defects, and how
they are detected, are in ``_full_cache.py``'s docstring.
"""

from __future__ import annotations

from typing import Any


# -- probes -----------------------------------------------------------------------------------------------------
def _probe(model_type: str, **overrides: Any) -> dict:
    from hf_genfix.oracles import ProbeSkipped, check_rows_against_reference, generate_steps, left_pad, tiny_model
    from hf_genfix.oracles.sliding import prompts

    try:
        model = tiny_model(model_type, sliding_window=8, **overrides)
    except Exception as exc:  # noqa: BLE001 - 5.4.0's PhimoeConfig rejects its own tie_word_embeddings=False
        raise ProbeSkipped(f"no tiny {model_type} can be built on this release: {type(exc).__name__}: "
                           f"{str(exc).splitlines()[0]}") from exc
    rows = prompts(10, seed=5)
    ids, mask = left_pad(rows)
    run = generate_steps(model, ids, mask, max_new_tokens=6, pad_token_id=0, eos_token_id=None)
    return check_rows_against_reference(model, rows, run, f"{model_type}, sliding_window=8, 10-token prompt, "
                                        "6 greedy tokens", eos_token_id=[])


def probe_phimoe() -> dict:
    return _probe("phimoe")


def probe_qwen2_moe() -> dict:
    # Small experts (the tiny defaults give 17M parameters); every layer windowed, as the mask windows them all.
    return _probe("qwen2_moe", use_sliding_window=True, max_window_layers=0, num_experts=4,
                  moe_intermediate_size=16, shared_expert_intermediate_size=16)
